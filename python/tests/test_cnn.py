"""Convolutional and residual networks (uqnn's cnn model) against PyTorch: the same network built in
both, PyTorch's weights copied by uqnn.from_torch, outputs, gradients and Hessian-vector products
compared to 1e-10 relative in float64 (and float32 to float rounding); unsupported modules named;
draws back to state dicts; a CNN classifier fitted from Python."""
import numpy as np
import pytest

import uqnn
from uqnn import _core
from uqnn._torch import cnn_module, cnn_state_dicts

torch = pytest.importorskip("torch", reason="python3-torch (Debian) is not installed")
nn = torch.nn

RTOL = 1e-10


class BasicBlock(nn.Module):
    """torchvision's ResNet BasicBlock (same attribute names and forward), with a choice of norm."""

    def __init__(self, inplanes, planes, stride=1, norm=lambda c: nn.BatchNorm2d(c)):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = norm(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = norm(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride=stride, bias=False), norm(planes))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """torchvision's ResNet layout (conv1, bn1, relu, maxpool, layer1.., avgpool, flatten, fc), small."""

    def __init__(self, channels=1, width=4, classes=3, norm=lambda c: nn.GroupNorm(2, c)):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, width, 3, stride=1, padding=1, bias=False)
        self.bn1 = norm(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = nn.Sequential(BasicBlock(width, width, norm=norm), BasicBlock(width, width, norm=norm))
        self.layer2 = nn.Sequential(BasicBlock(width, 2 * width, stride=2, norm=norm))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(2 * width, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class FilterResponseNorm2d(nn.Module):
    """FRN with TLU (Singh & Krishnan 2020), as Izmailov et al. (2021) use it."""

    def __init__(self, channels, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(1, channels, 1, 1))
        self.bias = nn.Parameter(torch.zeros(1, channels, 1, 1))
        self.tau = nn.Parameter(torch.zeros(1, channels, 1, 1))
        self.eps = eps

    def forward(self, x):
        nu2 = x.pow(2).mean(dim=(2, 3), keepdim=True)
        x = x * torch.rsqrt(nu2 + self.eps)
        return torch.max(self.weight * x + self.bias, self.tau)


def randomise(net, seed):
    """Every parameter and BatchNorm statistic away from its initial value (norms not the identity)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=g, dtype=p.dtype))
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(0.2 * torch.randn(m.running_mean.shape, generator=g, dtype=m.running_mean.dtype))
                m.running_var.copy_(0.5 + torch.rand(m.running_var.shape, generator=g, dtype=m.running_var.dtype))
    return net.eval()


def sequential_net():
    torch.manual_seed(0)
    return randomise(nn.Sequential(
        nn.Conv2d(2, 4, 3, stride=1, padding=1), nn.Tanh(), nn.MaxPool2d(2),
        nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), groups=2), nn.GroupNorm(3, 6), nn.ReLU(),
        nn.AvgPool2d(3, stride=2, padding=1), nn.Flatten(), nn.Linear(6 * 2 * 2, 8), nn.SiLU(), nn.Linear(8, 3)).double(), 1)


def residual_net():
    torch.manual_seed(1)
    return randomise(nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(), BasicBlock(4, 4), BasicBlock(4, 8, stride=2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 3)).double(), 2)


def resnet_net():
    torch.manual_seed(2)
    return randomise(ResNet().double(), 3)


def frn_net():
    torch.manual_seed(3)
    return randomise(nn.Sequential(
        nn.Conv2d(1, 4, 3), FilterResponseNorm2d(4), nn.Conv2d(4, 4, 3, padding=1), FilterResponseNorm2d(4), nn.Flatten(),
        nn.Linear(4 * 6 * 6, 2)).double(), 4)


NETWORKS = {"sequential": (sequential_net, (2, 12, 10)), "residual": (residual_net, (1, 8, 8)),
            "resnet": (resnet_net, (1, 12, 12)), "frn": (frn_net, (1, 8, 8))}


def inputs(shape, n=5, seed=7):
    return np.random.default_rng(seed).normal(size=(n, *shape))


def torch_value_and_gradient(net, x, G):
    net.zero_grad()
    y = net(torch.tensor(x))
    (torch.tensor(G) * y).sum().backward()
    return y.detach().numpy(), np.concatenate([p.grad.numpy().reshape(-1) for p in net.parameters()])


def assert_close(got, ref, rtol=RTOL):
    """Relative to the largest entry (entries near zero are compared at that scale)."""
    scale = np.max(np.abs(ref))
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_outputs_and_gradients_equal_pytorchs(name):
    make, shape = NETWORKS[name]
    net = make()
    spec = uqnn.from_torch(net, input_shape=shape)
    assert spec["model"] == "cnn" and spec["theta"].size == sum(p.numel() for p in net.parameters())
    model = _core.Model(spec["description"])
    # uqnn's blocks are the state_dict's parameters, in its order and under its names
    assert [b[0] for b in model.param_blocks] == [k for k, _ in net.named_parameters()]
    x = inputs(shape)
    G = np.random.default_rng(8).normal(size=(x.shape[0], model.output_dim))
    X = x.reshape(x.shape[0], -1)  # channel-major rows: PyTorch's flattening of [C, H, W]
    y_ref, g_ref = torch_value_and_gradient(net, x, G)
    assert_close(model.forward(spec["theta"], X), y_ref)
    value, grad = model.value_and_gradient(spec["theta"], X, G)
    assert value == pytest.approx(float((G * y_ref).sum()), rel=RTOL)
    assert_close(grad, g_ref)


@pytest.mark.parametrize("name", ["sequential", "residual", "frn"])
def test_hessian_vector_products_equal_pytorchs_double_backward(name):
    make, shape = NETWORKS[name]
    net = make()
    spec = uqnn.from_torch(net, input_shape=shape)
    model = _core.Model(spec["description"])
    x = inputs(shape, n=3)
    G = np.random.default_rng(9).normal(size=(3, model.output_dim))
    v = np.random.default_rng(10).normal(size=spec["theta"].size)
    params = list(net.parameters())
    y = net(torch.tensor(x))
    loss = (torch.tensor(G) * y).sum() + 0.5 * (y * y).sum()
    grads = torch.autograd.grad(loss, params, create_graph=True)
    flat = torch.cat([g.reshape(-1) for g in grads])
    hv_ref = torch.cat([h.reshape(-1) for h in torch.autograd.grad(flat @ torch.tensor(v), params)]).numpy()
    hv = model.hessian_vector_product(spec["theta"], v, x.reshape(3, -1), G)
    assert_close(hv, hv_ref)


def test_max_pool_ties_go_to_the_first_maximum_as_in_pytorch():
    # relu's zeros and equal pixels tie in pooling windows: the gradient must take PyTorch's route.
    net = nn.Sequential(nn.Conv2d(2, 1, 1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4, 1)).double()
    with torch.no_grad():
        net[0].weight.copy_(torch.tensor([[[[1.0]], [[1.0]]]]))
        net[0].bias.zero_()
    x = np.zeros((3, 2, 4, 4))
    x[0, 0, 0, 0] = x[0, 1, 1, 1] = 1.0  # a tie between channels' pixels in window (0, 0)
    x[1, 0, 2, 3] = x[1, 1, 3, 2] = 2.0
    x[2] = -1.0  # relu's zeros everywhere
    spec = uqnn.from_torch(net, input_shape=(2, 4, 4))
    model = _core.Model(spec["description"])
    G = np.ones((3, 1))
    y_ref, g_ref = torch_value_and_gradient(net, x, G)
    np.testing.assert_array_equal(model.value_and_gradient(spec["theta"], x.reshape(3, -1), G)[1], g_ref)


def test_float32_agrees_with_pytorchs_float32():
    make, shape = NETWORKS["residual"]
    net = make().float()
    spec = uqnn.from_torch(net, input_shape=shape)
    model = _core.Model(spec["description"])
    model.set_precision("float32")
    x = inputs(shape).astype(np.float32)
    G = np.random.default_rng(8).normal(size=(x.shape[0], model.output_dim)).astype(np.float32)
    y_ref, g_ref = torch_value_and_gradient(net, x, G)
    assert_close(model.forward(spec["theta"], x.reshape(x.shape[0], -1).astype(np.float64)), y_ref, rtol=1e-5)
    _, grad = model.value_and_gradient(spec["theta"], x.reshape(x.shape[0], -1).astype(np.float64), G.astype(np.float64))
    assert_close(grad, g_ref, rtol=1e-4)
    assert model.description["precision"] == "float32"


def test_layer_list_equals_the_same_sequential():
    # conv4k3p1,gn2,pool2,conv6k3,fc16 with relu <-> the nn.Sequential it describes; weights copied in order.
    desc = _core.cnn_description("conv4k3p1,gn2,pool2,conv6k3,fc16", [1, 10, 10], 3, "relu")
    torch.manual_seed(5)
    net = randomise(nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.GroupNorm(2, 4), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(4, 6, 3), nn.ReLU(), nn.Flatten(), nn.Linear(6 * 3 * 3, 16), nn.ReLU(),
                                  nn.Linear(16, 3)).double(), 6)
    model = _core.Model(desc)
    names = [b[0] for b in model.param_blocks]
    assert names == ["conv1.weight", "conv1.bias", "gn1.weight", "gn1.bias", "conv2.weight", "conv2.bias", "fc1.weight",
                     "fc1.bias", "fc2.weight", "fc2.bias"]
    theta = torch.cat([p.detach().reshape(-1) for p in net.parameters()]).numpy()
    x = inputs((1, 10, 10))
    G = np.random.default_rng(1).normal(size=(x.shape[0], 3))
    y_ref, g_ref = torch_value_and_gradient(net, x, G)
    assert_close(model.forward(theta, x.reshape(5, -1)), y_ref)
    assert_close(model.value_and_gradient(theta, x.reshape(5, -1), G)[1], g_ref)


@pytest.mark.parametrize("layers,activation", [("resnet8w4gn2", "tanh"), ("conv4k3p1,frn,res4bn,res6s2nn,avgpool2,fc8", "silu"),
                                               ("conv6k5p2,pool2,conv16k5g2,pool2s1p1,gap,fc12", "relu")])
def test_layer_lists_equal_their_pytorch_module(layers, activation):
    # Any layer list (the ResNet preset included) against the PyTorch module built from its description.
    desc = _core.cnn_description(layers, [1, 12, 12], 3, activation)
    model = _core.Model(desc)
    theta = model.initial_params(1) + 0.2 * np.random.default_rng(2).normal(size=model.num_params)
    net = cnn_module(desc)
    net.load_state_dict(cnn_state_dicts(theta, desc)[0])  # strict: every key and shape
    x = inputs((1, 12, 12))
    G = np.random.default_rng(3).normal(size=(x.shape[0], 3))
    y_ref, g_ref = torch_value_and_gradient(net, x.reshape(5, -1), G)
    assert_close(model.forward(theta, x.reshape(5, -1)), y_ref)
    assert_close(model.value_and_gradient(theta, x.reshape(5, -1), G)[1], g_ref)


def test_state_dicts_load_into_the_module():
    make, shape = NETWORKS["resnet"]
    net = make()
    spec = uqnn.from_torch(net, input_shape=shape)
    theta2 = spec["theta"] + 0.01
    sd = cnn_state_dicts(theta2[None, :], spec["description"], spec["shapes"])[0]
    net.load_state_dict(sd)
    x = inputs(shape)
    with torch.no_grad():
        y = net(torch.tensor(x)).numpy()
    assert_close(_core.Model(spec["description"]).forward(theta2, x.reshape(5, -1)), y)
    # BatchNorm's running statistics go along (eval-mode affine map)
    spec = uqnn.from_torch(residual_net(), input_shape=(1, 8, 8))
    sd = cnn_state_dicts(spec["theta"], spec["description"])[0]
    assert "1.running_mean" in sd and "3.bn1.running_var" in sd and sd["0.weight"].shape == (4, 1, 3, 3)


def test_unsupported_modules_are_named_with_what_is_supported():
    with pytest.raises(ValueError, match=r"Dropout \(at '2'\) is not supported; supported are nn.Sequential of nn.Conv2d"):
        uqnn.from_torch(nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Dropout(0.1), nn.Flatten(), nn.Linear(8, 1)),
                        input_shape=(1, 4, 4))
    with pytest.raises(ValueError, match=r"Conv2d \(at '0'\) is not supported: dilation \(2, 2\)"):
        uqnn.from_torch(nn.Sequential(nn.Conv2d(1, 2, 3, dilation=2)), input_shape=(1, 8, 8))
    with pytest.raises(ValueError, match=r"BatchNorm2d \(at '1'\) is not supported in training mode"):
        uqnn.from_torch(nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)).train(), input_shape=(1, 8, 8))
    with pytest.raises(ValueError, match="needs input_shape"):
        uqnn.from_torch(nn.Sequential(nn.Conv2d(1, 2, 3)))
    with pytest.raises(ValueError, match="kernel 3x3 is larger than its input 2x2"):
        uqnn.from_torch(nn.Sequential(nn.Conv2d(1, 2, 3)), input_shape=(1, 2, 2))
    with pytest.raises(ValueError, match=r"2.weight has shape \(3, 36\) but its input of shape \(1, 6, 6\) gives 3 x 32 values"):
        uqnn.from_torch(nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(36, 3)), input_shape=(1, 6, 6))
    # an MLP stays an MLP
    assert "hidden" in uqnn.from_torch(nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1)))


def test_bad_layer_lists_name_the_token():
    with pytest.raises(ValueError, match=r"layers 'conv4k3,pol2': token 2 'pol2' is not a layer; valid tokens are conv<out>k<k>"):
        _core.cnn_description("conv4k3,pol2", [1, 8, 8], 2)


def test_a_cnn_classifier_fits_the_8x8_digits():
    sklearn = pytest.importorskip("sklearn.datasets", reason="python3-sklearn (Debian) is not installed")
    X, y = sklearn.load_digits(return_X_y=True)
    X = X / 16.0
    clf = uqnn.BNNClassifier(model="cnn", layers="conv8k3p1,pool2,conv16k3,fc32", input_shape=[1, 8, 8], activation="relu",
                             method="map", standardize=False, epochs=30, batch_size=64, optimizer="adam", lr=3e-3,
                             progress=False)
    clf.fit(X[:1200], y[:1200])
    assert clf.predict_proba(X[1200:]).shape == (X.shape[0] - 1200, 10)
    assert (clf.predict(X[1200:]) == y[1200:]).mean() > 0.9


def test_bnn_from_torch_starts_a_cnn_fit_at_the_users_network():
    sklearn = pytest.importorskip("sklearn.datasets", reason="python3-sklearn (Debian) is not installed")
    X, y = sklearn.load_digits(return_X_y=True)
    X, y = X[:200] / 16.0, y[:200]
    torch.manual_seed(4)
    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.GroupNorm(2, 4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                        nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 10)).double()
    # No training: the MAP is the user's network, so the class probabilities are its softmax.
    clf = uqnn.BNNClassifier.from_torch(net, input_shape=(1, 8, 8), method="map", standardize=False, optimizer="adam", epochs=1,
                                        lr=1e-300, progress=False).fit(X, y)
    assert clf.method_options["layers"] == "conv4k3p1,gn2,pool2,flatten,fc16"
    with torch.no_grad():
        ref = torch.softmax(net(torch.tensor(X.reshape(-1, 1, 8, 8))), dim=1).numpy()
    np.testing.assert_allclose(clf.predict_proba(X), ref, rtol=1e-10, atol=1e-12)
    sd = clf.to_torch_state_dicts()
    assert len(sd) == 1 and list(sd[0]) == [k for k, _ in net.named_parameters()]
    for p in net.parameters():
        p.data.zero_()
    net.load_state_dict(sd[0])
    with torch.no_grad():
        np.testing.assert_allclose(torch.softmax(net(torch.tensor(X.reshape(-1, 1, 8, 8))), dim=1).numpy(), ref, rtol=1e-10,
                                   atol=1e-12)
    # a network no layer list builds: refused by uqnn's own layers (backend="native"), saying what
    # evaluates it instead; by default it runs through PyTorch (docs/bring-your-own-model.md)
    odd = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Conv2d(4, 4, 3), nn.Tanh(), nn.Flatten(), nn.Linear(64, 10))
    with pytest.raises(ValueError, match=r"no layer list \(--layers\) for a fit to take: it mixes activations"):
        uqnn.BNNClassifier.from_torch(odd, input_shape=(1, 8, 8), method="map", backend="native")
    assert uqnn.BNNClassifier.from_torch(odd, input_shape=(1, 8, 8), method="map")._torch_setup() is not None
