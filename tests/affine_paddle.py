"""The conformance suite's affine model, y = tanh(x @ weight + bias), as a paddle layer."""

import paddle


class Affine(paddle.nn.Layer):
    def __init__(self, n_in: int, n_out: int):
        super().__init__()
        self.weight = self.create_parameter([n_in, n_out])
        self.bias = self.create_parameter([n_out], is_bias=True)

    def forward(self, x):
        return paddle.tanh(paddle.matmul(x, self.weight) + self.bias)
