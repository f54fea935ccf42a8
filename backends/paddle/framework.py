"""``import_paddle``: the one way this backend's modules import paddle.

A leaf module: the backend class (``__init__``) and every module that runs paddle (session, zoo, flops, ...) import
it from here, so none of them imports another to get paddle (see docs/architecture.md, "Layers").
"""

from __future__ import annotations

import os
import warnings


def import_paddle():
    """Import paddle quietly, and undo the ``OMP_NUM_THREADS=1`` it sets when the variable is unset.

    Left in place, that variable would silently make any framework imported later run one thread.
    """
    os.environ.setdefault("GLOG_minloglevel", "2")  # paddle's C++ logs every graph pass otherwise
    had_omp = "OMP_NUM_THREADS" in os.environ
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="No ccache found")
        import paddle

    if not had_omp:
        os.environ.pop("OMP_NUM_THREADS", None)
    return paddle
