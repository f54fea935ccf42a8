"""The torch and paddle definitions of every reference model must not drift: same parameter names and shapes."""

import pytest

from speechperf.zoo.catalog import get_model, known_models

pytest.importorskip("torch")
pytest.importorskip("paddle")


@pytest.mark.parametrize("name", known_models())
def test_torch_and_paddle_define_the_same_parameters(name):
    from speechperf.backends.paddle.models import build as build_paddle
    from speechperf.backends.paddle.models import parent_of as paddle_parent
    from speechperf.backends.torch.models import build as build_torch
    from speechperf.backends.torch.models import parent_of as torch_parent

    hp = next(iter(get_model(name).presets.values()))  # the smallest preset (pretrained models have one)
    torch_components, paddle_components = build_torch(name, hp), build_paddle(name, hp)
    assert set(torch_components) == set(paddle_components) == set(get_model(name).component_names)
    paddle_layer = paddle_parent(paddle_components)
    linear = {f"{prefix}.weight" for prefix, sub in paddle_layer.named_sublayers() if type(sub).__name__ == "Linear"}
    torch_shapes = {k: tuple(v.shape) for k, v in torch_parent(torch_components).state_dict().items()}
    paddle_shapes = {
        k: tuple(v.shape)[::-1] if k in linear else tuple(v.shape) for k, v in paddle_layer.state_dict().items()
    }
    assert torch_shapes == paddle_shapes
