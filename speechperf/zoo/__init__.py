"""The reference model zoo: small, seeded speech models, one per stage type, identical in torch and paddle and
exported to every format the backends load.

``catalog`` holds the registry and the contract (read its docstring); each ``<model>.py`` describes one model and
says which sizes its ``tiny`` and ``base`` presets have and why. ``build`` writes the artifacts and manifests;
``cache`` keeps built models under ``<cache>/zoo/<preset>``, the cache being ``speechperf.cache.cache_dir()``
(the platform's user cache folder; ``SPEECHPERF_CACHE_DIR`` moves the whole cache).

Presets: ``tiny`` is for tests (every model under ~2 MB, a forward in milliseconds); ``base`` has the sizes and
shapes of a small production model, for benchmarking.

Nothing here imports a framework; frameworks are reached through the backend registry.
"""
