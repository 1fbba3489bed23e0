"""gpucast-export's hints for what torch (1.13, Debian 12's) cannot export: each construct of
EXPORT_HINTS is exported for real and must fail with its hint, and the rewrite the hint gives
must export and pass gpucast-export's check (every node costed, torch's parameters).

Needs GPUCAST (the gpucast binary: make test sets it) and Debian's python3-torch.
"""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORT = os.path.join(HERE, "gpucast-export")

MODELS = textwrap.dedent('''
    import math, torch, torch.nn as nn, torch.nn.functional as F, torch.utils.checkpoint

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.b = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))

    class Checkpointed(Block):
        def forward(self, x):
            return x + torch.utils.checkpoint.checkpoint(self.b, x)

    class Direct(Block):  # the hint's rewrite
        def forward(self, x):
            return x + self.b(x)

    class ConvSame(nn.Module):
        def __init__(self, padding="same"):
            super().__init__()
            self.c = nn.Conv1d(4, 4, 5, padding=padding, dilation=2)
        def forward(self, x):
            return self.c(x)

    def conv_valid():
        return ConvSame("valid")

    def conv_numbers():  # the hint's rewrite of "same": d * (k - 1) // 2
        return ConvSame(2 * (5 - 1) // 2)

    class Shuffle(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(4, 4, 1)
            self.s = nn.ChannelShuffle(2)
        def forward(self, x):
            return self.s(self.c(x))

    class ShuffleByView(Shuffle):  # the hint's rewrite
        def forward(self, x):
            x = self.c(x)
            b, c, h, w = x.shape
            return x.view(b, 2, c // 2, h, w).transpose(1, 2).reshape(b, c, h, w)

    class Gumbel(nn.Module):
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(8, 8)
        def forward(self, x):
            return F.gumbel_softmax(self.l(x), hard=True)

    class GumbelByHand(Gumbel):  # the hint's rewrite of the noise
        def forward(self, x):
            logits = self.l(x)
            g = -torch.log(-torch.log(torch.rand_like(logits)))
            return F.softmax(logits + g, dim=-1)

    class Bag(nn.Module):
        def __init__(self, padding_idx=0):
            super().__init__()
            self.b = nn.EmbeddingBag(10, 4, padding_idx=padding_idx)
            self.l = nn.Linear(4, 2)
        def forward(self, ids):
            return self.l(self.b(ids))

    def bag_without_padding():
        return Bag(None)

    class Bilinear(nn.Module):
        def __init__(self):
            super().__init__()
            self.b = nn.Bilinear(8, 6, 4)
        def forward(self, x, y):
            return self.b(x, y)

    class BilinearByEinsum(Bilinear):  # the hint's rewrite
        def forward(self, x, y):
            t = torch.einsum("bi,oij->boj", x, self.b.weight)
            return torch.einsum("boj,bj->bo", t, y) + self.b.bias

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.l = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
        def forward(self, x):
            return self.l(x)

    def half_mlp():
        return Mlp().half()

    class TakeAlong(nn.Module):  # a sort's indices applied to the values
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(8, 8)
        def forward(self, x):
            h = self.l(x)
            return torch.take_along_dim(h, torch.argsort(h, -1), -1)

    class TakeByGather(TakeAlong):  # the hint's rewrite
        def forward(self, x):
            h = self.l(x)
            return torch.gather(h, -1, torch.argsort(h, -1))

    class SmoothedLoss(nn.Module):  # the loss in forward, with label smoothing
        def __init__(self, smoothing=0.1):
            super().__init__()
            self.l = nn.Linear(8, 10)
            self.smoothing = smoothing
        def forward(self, x, y):
            return F.cross_entropy(self.l(x), y, label_smoothing=self.smoothing)

    def loss_without_smoothing():
        return SmoothedLoss(0.0)

    class ScatterMean(nn.Module):  # a GNN's mean aggregation of messages into their destinations
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(8, 8)
        def forward(self, x, dst):
            index = dst.unsqueeze(1).expand(-1, 8)
            return torch.zeros_like(x).scatter_reduce(0, index, self.l(x), "mean", include_self=False)

    class ScatterMeanByAdd(ScatterMean):  # the hint's rewrite
        def forward(self, x, dst):
            index = dst.unsqueeze(1).expand(-1, 8)
            total = torch.zeros_like(x).scatter_add(0, index, self.l(x))
            return total / torch.zeros_like(x).scatter_add(0, index, torch.ones_like(x)).clamp(min=1)

    class Atan2(nn.Module):  # an angle from two features (polar coordinates, a flow's direction)
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(8, 8)
        def forward(self, x):
            h = self.l(x)
            return torch.atan2(h[:, :4], h[:, 4:])

    class Atan2ByAtan(Atan2):  # the hint's rewrite
        def forward(self, x):
            h = self.l(x)
            y, x = h[:, :4], h[:, 4:]
            a = torch.atan(y / x)
            pi = torch.full_like(a, 3.141592653589793)
            return torch.where(x < 0, a + torch.where(y >= 0, pi, -pi), a)

    class LogAddExp(nn.Module):  # a log-domain sum of two scores (two mixture components' log-likelihoods)
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(8, 8)
        def forward(self, x):
            h = self.l(x)
            return torch.logaddexp(h[:, :4], h[:, 4:])

    class LogAddExpByMax(LogAddExp):  # the hint's rewrite
        def forward(self, x):
            h = self.l(x)
            a, b = h[:, :4], h[:, 4:]
            m = torch.maximum(a, b)
            return m + torch.log(torch.exp(a - m) + torch.exp(b - m))

    class LogAddExp2(nn.Module):  # a log2-domain sum of two scores (bits)
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(8, 8)
        def forward(self, x):
            h = self.l(x)
            return torch.logaddexp2(h[:, :4], h[:, 4:])

    class LogAddExp2ByMax(LogAddExp2):  # the hint's rewrite
        def forward(self, x):
            h = self.l(x)
            a, b = h[:, :4], h[:, 4:]
            m = torch.maximum(a, b)
            ln2 = math.log(2)
            return m + torch.log2(torch.exp((a - m) * ln2) + torch.exp((b - m) * ln2))

    class LogCumSumExp(nn.Module):  # a Cox model's log risk sets: log of the running sum of exp(risk)
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(8, 8)
        def forward(self, x):
            return torch.logcumsumexp(self.l(x), 1)

    class LogCumSumExpByCumsum(LogCumSumExp):  # the hint's rewrite
        def forward(self, x):
            h = self.l(x)
            m = h.amax(1, keepdim=True)
            return m + torch.log(torch.cumsum(torch.exp(h - m), 1))

    class CumProd(nn.Module):  # a survival curve: the running product of each step's survival probability
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(8, 8)
        def forward(self, x):
            return torch.cumprod(torch.sigmoid(self.l(x)), 1)

    class CumProdByLog(CumProd):  # the hint's rewrite (x > 0)
        def forward(self, x):
            return torch.exp(torch.cumsum(torch.log(torch.sigmoid(self.l(x))), 1))

    class CumProdAnySign(CumProd):  # the hint's rewrite for x of any sign (here the same probabilities)
        def forward(self, x):
            p = torch.sigmoid(self.l(x))
            sign = 1 - 2 * (torch.cumsum((p < 0).to(p.dtype), 1) % 2)
            return torch.exp(torch.cumsum(torch.log(p.abs()), 1)) * sign

    class Expm1(nn.Module):  # a regression trained on log1p(y), mapped back to y
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(8, 8)
        def forward(self, x):
            return torch.expm1(self.l(x))

    class Expm1ByExp(Expm1):  # the hint's rewrite
        def forward(self, x):
            return torch.exp(self.l(x)) - 1

    class Trunc(nn.Module):  # fixed-point quantization: steps of 1/16, rounded toward zero
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(8, 8)
        def forward(self, x):
            return torch.trunc(self.l(x) * 16) / 16

    class Fix(Trunc):  # torch.fix, the same as torch.trunc (and as Tensor.trunc)
        def forward(self, x):
            return torch.fix(self.l(x) * 16) / 16

    class TruncByWhere(Trunc):  # the hint's rewrite
        def forward(self, x):
            h = self.l(x) * 16
            return torch.where(h < 0, torch.ceil(h), torch.floor(h)) / 16

    class SpatialTransformer(nn.Module):  # a localisation net's affine grid, then sampling
        def __init__(self):
            super().__init__()
            self.loc = nn.Linear(3 * 8 * 8, 6)
        def forward(self, x):
            theta = self.loc(x.flatten(1)).view(-1, 2, 3)
            return F.grid_sample(x, F.affine_grid(theta, x.size(), align_corners=False), align_corners=False)

    class SpatialTransformerByMatmul(SpatialTransformer):  # the hint's rewrite
        def forward(self, x):
            theta = self.loc(x.flatten(1)).view(-1, 2, 3)
            B, C, H, W = x.shape
            xs = (torch.arange(W, dtype=x.dtype) * 2 + 1) / W - 1
            ys = (torch.arange(H, dtype=x.dtype) * 2 + 1) / H - 1
            base = torch.stack([xs.view(1, W).expand(H, W), ys.view(H, 1).expand(H, W),
                                torch.ones(H, W, dtype=x.dtype)], -1)
            grid = (base.view(1, H * W, 3) @ theta.transpose(1, 2)).view(B, H, W, 2)
            return F.grid_sample(x, grid, align_corners=False)

    class Unpool(nn.Module):  # SegNet's decoder: max-unpooling at the encoder's indices
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(3, 3, 3, padding=1)
        def forward(self, x):
            h, idx = F.max_pool2d(self.c(x), 2, return_indices=True)
            return F.max_unpool2d(h, idx, 2)

    class UnpoolByScatter(Unpool):  # the hint's rewrite
        def forward(self, x):
            y = self.c(x)
            h, idx = F.max_pool2d(y, 2, return_indices=True)
            B, C = h.shape[:2]
            return torch.zeros_like(y).view(B, C, -1).scatter(2, idx.view(B, C, -1), h.view(B, C, -1)).view_as(y)

    class Folded(nn.Module):  # overlapping 3 x 3 patches of 2 channels (stride 2, padding 1) summed into 6 x 6
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(18, 18)
            self.f = nn.Fold((6, 6), 3, padding=1, stride=2)
        def forward(self, x):  # x [B, 18, 9]: 3 x 3 blocks, each of 2 x 3 x 3 values
            return self.f(self.l(x.transpose(1, 2)).transpose(1, 2))

    class FoldedByConvTranspose(Folded):  # the hint's rewrite: Lh = Lw = 3, (3 - 1) * 2 - 2 + 3 = 5: 1 short of 6
        def __init__(self):
            super().__init__()
            self.register_buffer("onehot", torch.eye(9).view(9, 1, 3, 3).repeat(2, 1, 1, 1))
        def forward(self, x):
            cols = self.l(x.transpose(1, 2)).transpose(1, 2)
            return F.conv_transpose2d(cols.reshape(-1, 18, 3, 3), self.onehot, stride=2, padding=1,
                                      output_padding=(1, 1), groups=2)

    class LstmProj(nn.Module):  # an LSTM whose hidden state is projected, as speech recognizers use
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(8, 16, proj_size=4, batch_first=True)
        def forward(self, x):
            return self.lstm(x)[0]

    class LstmProjByLoop(nn.Module):  # the hint's rewrite: torch's gates and weights, a step at a time
        def __init__(self):
            super().__init__()
            self.ih = nn.Linear(8, 4 * 16)
            self.hh = nn.Linear(4, 4 * 16)
            self.hr = nn.Linear(16, 4, bias=False)
        def forward(self, x):
            gx = self.ih(x)
            h, c = x.new_zeros(x.size(0), 4), x.new_zeros(x.size(0), 16)
            out = []
            for t in range(x.size(1)):
                i, f, g, o = (gx[:, t] + self.hh(h)).chunk(4, 1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = self.hr(torch.sigmoid(o) * torch.tanh(c))
                out.append(h)
            return torch.stack(out, 1)

    def dft(n, k):  # the hint's [n, k] matrices: cos and sin of 2 pi n k / N, the angle exact in float64
        angle = 2 * math.pi * (torch.arange(n, dtype=torch.float64)[:, None] * torch.arange(k) % n) / n
        return torch.cos(angle).float(), torch.sin(angle).float()

    class SpectralFilter(nn.Module):  # a Fourier layer: a learned gain per frequency of the signal
        def __init__(self):
            super().__init__()
            self.gain = nn.Parameter(torch.randn(9))
            self.l = nn.Linear(16, 16)
        def forward(self, x):  # x [B, 4, 16]
            return self.l(torch.fft.irfft(torch.fft.rfft(x) * self.gain, n=16))

    class SpectralFilterByMatmul(SpectralFilter):  # the hint's rewrite
        def __init__(self):
            super().__init__()
            cos, sin = dft(16, 9)
            self.register_buffer("cos", cos)
            self.register_buffer("sin", sin)
            self.register_buffer("w", torch.tensor([1.0] + [2.0] * 7 + [1.0]))
        def forward(self, x):
            re, im = (x @ self.cos) * self.gain, -(x @ self.sin) * self.gain
            return self.l(((re * self.w) @ self.cos.T - (im * self.w) @ self.sin.T) / 16)

    class FftMagnitude(nn.Module):  # spectral features: the magnitude of each frequency of a real signal
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(16, 4)
        def forward(self, x):
            return self.l(torch.fft.fft(x).abs())

    class FftMagnitudeByMatmul(FftMagnitude):  # the hint's rewrite (fft of a real x: K = N)
        def __init__(self):
            super().__init__()
            cos, sin = dft(16, 16)
            self.register_buffer("cos", cos)
            self.register_buffer("sin", sin)
        def forward(self, x):
            re, im = x @ self.cos, -(x @ self.sin)
            return self.l(torch.sqrt(re * re + im * im))

    class Spectrogram(nn.Module):  # an audio front end: an STFT's magnitudes, a linear layer per frame
        def __init__(self):
            super().__init__()
            self.register_buffer("window", torch.hann_window(16))
            self.l = nn.Linear(9, 8)
        def forward(self, x):  # x [B, 64]; center=True, the default
            s = torch.stft(x, 16, 4, window=self.window, return_complex=True)
            return self.l(s.abs().transpose(1, 2))

    class SpectrogramByConv(Spectrogram):  # the hint's rewrite
        def __init__(self):
            super().__init__()
            cos, sin = dft(16, 9)
            self.register_buffer("wcos", (self.window[:, None] * cos).T[:, None])
            self.register_buffer("wsin", (self.window[:, None] * sin).T[:, None])
        def forward(self, x):
            x = F.pad(x[:, None], (8, 8), mode="reflect")
            re, im = F.conv1d(x, self.wcos, stride=4), -F.conv1d(x, self.wsin, stride=4)
            return self.l(torch.sqrt(re * re + im * im).transpose(1, 2))

    class IstftHead(nn.Module):  # a vocoder's head: a spectrogram's real and imaginary parts, to a waveform
        def __init__(self):
            super().__init__()
            self.register_buffer("window", torch.hann_window(16))
            self.l = nn.Linear(8, 18)
        def forward(self, x):  # x [B, frames, 8]; re and im stacked last, as torch.istft also takes them
            h = self.l(x).view(x.size(0), x.size(1), 9, 2).transpose(1, 2)
            return torch.istft(h, 16, 4, window=self.window)

    class IstftByConvTranspose(IstftHead):  # the hint's rewrite
        def __init__(self):
            super().__init__()
            cos, sin = dft(16, 9)
            a = torch.tensor([1.0] + [2.0] * 7 + [1.0])
            self.register_buffer("w", (torch.cat((cos * a, -sin * a), 1).T * self.window / 16)[:, None])
        def forward(self, x):
            h = self.l(x).view(x.size(0), x.size(1), 9, 2).transpose(1, 2)
            y = F.conv_transpose1d(torch.cat((h[..., 0], h[..., 1]), 1), self.w, stride=4)[:, 0]
            env = F.conv_transpose1d(x.new_ones(1, 1, x.size(1)), (self.window ** 2).view(1, 1, -1), stride=4)[0, 0]
            return y[:, 8:-8] / env[8:-8]

    def rope_angles(dim, end, theta=10000.0):  # LLaMA's precompute_freqs_cis, before torch.polar
        freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
        return torch.outer(torch.arange(end), freqs).float()

    class Rotary(nn.Module):  # LLaMA's rotary embedding (Meta's model.py): freqs_cis a complex constant
        def __init__(self):
            super().__init__()
            self.wq = nn.Linear(16, 16)
            angles = rope_angles(8, 32)
            self.freqs_cis = torch.polar(torch.ones_like(angles), angles)
        def rotate(self, xq, freqs_cis):
            xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
            freqs_cis = freqs_cis.view(1, xq_.size(1), 1, xq_.size(-1))
            return torch.view_as_real(xq_ * freqs_cis).flatten(3).type_as(xq)
        def forward(self, x):  # x [B, seq, 16]: 2 heads of 8
            q = self.wq(x).view(x.size(0), x.size(1), 2, 8)
            return self.rotate(q, self.freqs_cis[: x.size(1)])

    class RotaryBuffer(Rotary):  # freqs_cis a buffer, the complex view taken first
        def __init__(self):
            super().__init__()
            self.register_buffer("cis", self.freqs_cis)
        def forward(self, x):
            q = self.wq(x).view(x.size(0), x.size(1), 2, 8)
            q_ = torch.view_as_complex(q.reshape(x.size(0), x.size(1), 2, 4, 2))
            freqs_cis = self.cis[: x.size(1)].view(1, x.size(1), 1, 4)
            return torch.view_as_real(q_ * freqs_cis).flatten(3)

    class RotaryPolar(Rotary):  # freqs_cis made in forward from the angles
        def __init__(self):
            super().__init__()
            self.register_buffer("angles", rope_angles(8, 32))
        def forward(self, x):
            q = self.wq(x).view(x.size(0), x.size(1), 2, 8)
            angles = self.angles[: x.size(1)]
            return self.rotate(q, torch.polar(torch.ones_like(angles), angles))

    class RotaryComplex(RotaryPolar):  # freqs_cis made by torch.complex of cos and sin
        def forward(self, x):
            q = self.wq(x).view(x.size(0), x.size(1), 2, 8)
            angles = self.angles[: x.size(1)]
            return self.rotate(q, torch.complex(torch.cos(angles), torch.sin(angles)))

    class RotaryReal(nn.Module):  # the hint's rewrite: interleaved pairs rotated by cos and sin of the angles
        def __init__(self):
            super().__init__()
            self.wq = nn.Linear(16, 16)
            angles = rope_angles(8, 32)
            self.register_buffer("cos", torch.cos(angles))
            self.register_buffer("sin", torch.sin(angles))
        def forward(self, x):
            q = self.wq(x).view(x.size(0), x.size(1), 2, 8)
            cos, sin = self.cos[: x.size(1), None], self.sin[: x.size(1), None]
            q1, q2 = q[..., 0::2], q[..., 1::2]
            return torch.stack((q1 * cos - q2 * sin, q1 * sin + q2 * cos), -1).flatten(-2)

    class MseInForward(nn.Module):  # an autoencoder returning its reconstruction loss
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(8, 4)
            self.dec = nn.Linear(4, 8)
        def forward(self, x):
            return F.mse_loss(self.dec(torch.relu(self.enc(x))), x)

    class MseWrittenOut(MseInForward):  # the hint's rewrite
        def forward(self, x):
            return ((self.dec(torch.relu(self.enc(x))) - x) ** 2).mean()

    class AdaptivePool(nn.Module):  # VGG's head in small: the feature map pooled to 3 x 3 for the classifier
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(3, 4, 3, stride=2, padding=1)
            self.pool = nn.AdaptiveAvgPool2d(3)
            self.l = nn.Linear(4 * 3 * 3, 2)
        def forward(self, x):
            return self.l(self.pool(self.c(x)).flatten(1))

    def bins(n_in, n_out):  # the hint's [n_out, n_in] averaging matrix: torch's adaptive-pool bins
        p = torch.zeros(n_out, n_in)
        for i in range(n_out):
            s, e = math.floor(i * n_in / n_out), math.ceil((i + 1) * n_in / n_out)
            p[i, s:e] = 1 / (e - s)
        return p

    class AdaptivePoolByMatmul(AdaptivePool):  # the hint's rewrite, at 8 x 8 inputs: a 4 x 4 map pooled to 3 x 3
        def __init__(self, n_in=4):
            super().__init__()
            self.register_buffer("ph", bins(n_in, 3))
            self.register_buffer("pw", bins(n_in, 3))
        def forward(self, x):
            return self.l((self.ph @ self.c(x) @ self.pw.T).flatten(1))

    def adaptive_pool_by_matmul_2():  # at 4 x 4 inputs: a 2 x 2 map spread to 3 x 3 (VGG's 2 x 2 to 7 x 7 at 64 x 64)
        return AdaptivePoolByMatmul(2)

    def ssdlite():  # torchvision's detection models want targets in training mode
        import torchvision
        return torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)

    def fasterrcnn():
        import torchvision
        return torchvision.models.detection.fasterrcnn_mobilenet_v3_large_fpn(weights=None, weights_backbone=None)

    def fasterrcnn_backbone():  # the hint's rewrite: the backbone and FPN
        return fasterrcnn().backbone

    class DenseDetector(nn.Module):  # the hint's rewrite for a one-stage detector: the backbone and dense heads
        def __init__(self, model):
            super().__init__()
            self.backbone, self.head = model.backbone, model.head
        def forward(self, images):
            return self.head(list(self.backbone(images).values()))

    def ssdlite_dense():
        return DenseDetector(ssdlite())

    class FunctionalDropout2d(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(4, 4, 3, padding=1)
        def forward(self, x):
            return F.dropout2d(self.c(x), 0.2, self.training)

    class ModuleDropout2d(nn.Module):  # the hint's rewrite
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(4, 4, 3, padding=1)
            self.d = nn.Dropout2d(0.2)
        def forward(self, x):
            return self.d(self.c(x))
''')

# factory, inputs, what the failing export's hint must say, the rewrite's factory (and its inputs
# where they differ; a list where the hint gives several)
CASES = [
    ("Checkpointed", ["x=float32[B,8]"], "torch.utils.checkpoint does not export", "Direct"),
    ("ConvSame", ["x=float32[B,4,20]"], "a convolution with padding='same' or 'valid'", "conv_numbers"),
    ("conv_valid", ["x=float32[B,4,20]"], "a convolution with padding='same' or 'valid'", None),
    ("Shuffle", ["x=float32[B,4,3,3]"], "nn.ChannelShuffle does not export", "ShuffleByView"),
    ("Gumbel", ["x=float32[B,8]"], "F.gumbel_softmax draws exponential noise", "GumbelByHand"),
    ("Bag", ["ids=int64[B,3]"], "nn.EmbeddingBag with padding_idx does not export", "bag_without_padding"),
    ("Bilinear", ["x=float32[B,8]", "y=float32[B,6]"], "nn.Bilinear does not export", "BilinearByEinsum"),
    ("half_mlp", ["x=float16[B,8]"], "the model is in half precision",
     ("Mlp", ["x=float32[B,8]"])),
    ("TakeAlong", ["x=float32[B,8]"], "torch.take_along_dim does not export", "TakeByGather"),
    ("SmoothedLoss", ["x=float32[B,8]", "y=int64[B]"], "a loss with label_smoothing does not export",
     "loss_without_smoothing"),
    ("AdaptivePool", ["x=float32[B,3,8,8]"], "nn.AdaptiveAvgPool2d (F.adaptive_avg_pool1d/2d/3d) exports with this "
     "torch only where its output size divides", ["AdaptivePoolByMatmul", ("AdaptivePool", ["x=float32[B,3,12,12]"])]),
    ("AdaptivePool", ["x=float32[B,3,4,4]"], "nn.AdaptiveAvgPool2d (F.adaptive_avg_pool1d/2d/3d) exports with this "
     "torch only where its output size divides", "adaptive_pool_by_matmul_2"),
    ("ssdlite", ["images=float32[B,3,64,64]"], "a torchvision detection model (Faster/Mask/Keypoint R-CNN, RetinaNet, "
     "FCOS, SSD) takes targets", "ssdlite_dense"),
    ("fasterrcnn", ["images=float32[B,3,64,64]"], "a torchvision detection model (Faster/Mask/Keypoint R-CNN, "
     "RetinaNet, FCOS, SSD) takes targets", "fasterrcnn_backbone"),
    ("FunctionalDropout2d", ["x=float32[B,4,6,6]"], "a channel or alpha dropout called as a function",
     "ModuleDropout2d"),
    ("ScatterMean", ["x=float32[B,8]", "dst=int64[B]"], "Tensor.scatter_reduce (a GNN's mean or max aggregation",
     "ScatterMeanByAdd"),
    ("Atan2", ["x=float32[B,8]"], "torch.atan2 does not export", "Atan2ByAtan"),
    ("LogAddExp", ["x=float32[B,8]"], "torch.logaddexp does not export", "LogAddExpByMax"),
    ("LogAddExp2", ["x=float32[B,8]"], "torch.logaddexp2 does not export", "LogAddExp2ByMax"),
    ("LogCumSumExp", ["x=float32[B,8]"], "torch.logcumsumexp does not export", "LogCumSumExpByCumsum"),
    ("CumProd", ["x=float32[B,8]"], "torch.cumprod does not export", ["CumProdByLog", "CumProdAnySign"]),
    ("Expm1", ["x=float32[B,8]"], "torch.expm1 does not export", "Expm1ByExp"),
    ("Trunc", ["x=float32[B,8]"], "torch.trunc (Tensor.trunc, torch.fix) does not export", "TruncByWhere"),
    ("Fix", ["x=float32[B,8]"], "torch.trunc (Tensor.trunc, torch.fix) does not export", None),
    ("SpatialTransformer", ["x=float32[B,3,8,8]"], "F.affine_grid (a spatial transformer's sampling grid)",
     "SpatialTransformerByMatmul"),
    ("Unpool", ["x=float32[B,3,8,8]"], "nn.MaxUnpool2d / F.max_unpool2d do not export", "UnpoolByScatter"),
    ("MseInForward", ["x=float32[B,8]"], "a loss computed in forward (F.mse_loss", "MseWrittenOut"),
    ("Folded", ["x=float32[B,18,9]"], "nn.Fold / F.fold (col2im) does not export", "FoldedByConvTranspose"),
    ("LstmProj", ["x=float32[B,5,8]"], "nn.LSTM with proj_size does not export", "LstmProjByLoop"),
    ("SpectralFilter", ["x=float32[B,4,16]"], "torch.fft (fft, rfft, irfft, ...) does not export",
     "SpectralFilterByMatmul"),
    ("FftMagnitude", ["x=float32[B,16]"], "torch.fft (fft, rfft, irfft, ...) does not export",
     "FftMagnitudeByMatmul"),
    ("Spectrogram", ["x=float32[B,64]"], "torch.stft does not export", "SpectrogramByConv"),
    ("IstftHead", ["x=float32[B,17,8]"], "torch.istft does not export", "IstftByConvTranspose"),
    ("Rotary", ["x=float32[B,5,16]"], "complex tensors (torch.view_as_complex, torch.polar", "RotaryReal"),
    ("RotaryBuffer", ["x=float32[B,5,16]"], "complex tensors (torch.view_as_complex, torch.polar", None),
    ("RotaryPolar", ["x=float32[B,5,16]"], "complex tensors (torch.view_as_complex, torch.polar", None),
    ("RotaryComplex", ["x=float32[B,5,16]"], "complex tensors (torch.view_as_complex, torch.polar", None),
]


class ExportHintsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.gpucast = os.environ.get("GPUCAST")
        if not cls.gpucast or not os.access(cls.gpucast, os.X_OK):
            raise RuntimeError("set GPUCAST to the gpucast binary (make test does)")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.models = os.path.join(cls.tmp.name, "hint_models.py")
        with open(cls.models, "w") as f:
            f.write(MODELS)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def export(self, factory, inputs):
        cmd = [sys.executable, EXPORT, f"{factory}={self.models}:{factory}", "--out", self.tmp.name,
               "--gpucast", self.gpucast, "--batch", "4"]
        for i in inputs:
            cmd += ["--input", i]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300)

    def test_each_construct_fails_with_its_hint_and_the_rewrite_exports(self):
        for factory, inputs, hint, rewrite in CASES:
            with self.subTest(factory):
                p = self.export(factory, inputs)
                self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                self.assertIn("torch.onnx.export failed", p.stderr)
                self.assertIn("hint: " + hint, p.stderr)
                rewrites = rewrite if isinstance(rewrite, list) else [rewrite] if rewrite else []
                for r in rewrites:
                    factory_r, inputs_r = r if isinstance(r, tuple) else (r, inputs)
                    q = self.export(factory_r, inputs_r)
                    self.assertEqual(q.returncode, 0, q.stdout + q.stderr)
                    self.assertIn("gpucast analyze the same", q.stdout)

    def test_the_adaptive_pool_rewrite_is_torchs(self):
        # The hint's averaging matrices against F.adaptive_avg_pool2d, smaller and larger outputs, bins of
        # one width and of several.
        import torch
        import torch.nn.functional as F
        ns = {}
        exec(MODELS, ns)
        torch.manual_seed(0)
        for n_in, n_out in ((4, 3), (2, 3), (2, 7), (1, 7), (10, 7), (8, 7), (13, 6)):
            x = torch.randn(2, 4, n_in, n_in)
            p = ns["bins"](n_in, n_out)
            torch.testing.assert_close(p @ x @ p.T, F.adaptive_avg_pool2d(x, n_out), rtol=0, atol=1e-6)

    def test_a_failure_without_a_known_cause_has_no_hint(self):
        # torch.linalg.eigh (torch 1.13 has no symbolic for it, and ONNX no such op): no hint is
        # better than a wrong one.
        with open(self.models, "a") as f:
            f.write(textwrap.dedent('''
                class Whitened(nn.Module):  # a decorrelating layer: the eigenvalues of each sample's Gram matrix
                    def __init__(self):
                        super().__init__()
                        self.l = nn.Linear(4, 4)
                    def forward(self, x):  # x [B, 6, 4]
                        h = self.l(x)
                        return torch.linalg.eigh(h.transpose(1, 2) @ h)[0]
            '''))
        p = self.export("Whitened", ["x=float32[B,6,4]"])
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("linalg_eigh", p.stderr)
        self.assertNotIn("hint:", p.stderr)


if __name__ == "__main__":
    unittest.main()


BATCH_MODELS = textwrap.dedent('''
    import torch, torch.nn as nn, torch.nn.functional as F

    class Latents(nn.Module):  # a Perceiver's cross-attention: the queries come from parameters alone
        def __init__(self):
            super().__init__()
            self.lat = nn.Parameter(torch.randn(32, 64))
            self.q = nn.Linear(64, 64)
            self.k = nn.Linear(64, 64)
        def forward(self, x):
            a = torch.einsum("ld,bnd->bln", self.q(self.lat), self.k(x)).softmax(-1)
            return torch.einsum("bln,bnd->bld", a, x)

    class Buffers(nn.Module):  # normalization constants and a sinusoidal table kept as buffers
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1))
            self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1))
            self.register_buffer("pe", torch.sin(torch.arange(128.0)).view(64, 2))
            self.l = nn.Linear(2, 4)
        def forward(self, x):  # x [B, 3, T]: every step's 3 channels normalized, then positions
            h = ((x - self.mean) / self.std)[:, :2].transpose(1, 2)
            return self.l(h + self.pe[:x.size(2)])

    class FineTune(nn.Module):  # a frozen backbone and a trained head
        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
            self.backbone.requires_grad_(False)
            self.head = nn.Linear(16, 2)
        def forward(self, x):
            return self.head(self.backbone(x))

    class SparseTables(nn.Module):  # DLRM-style tables with sparse gradients, and a dense one
        def __init__(self):
            super().__init__()
            self.user = nn.Embedding(1000, 8, sparse=True)
            self.bag = nn.EmbeddingBag(500, 8, mode="sum", sparse=True)
            self.dense = nn.Embedding(200, 8)
            self.fc = nn.Linear(24, 1)
        def forward(self, u, items, d):
            return self.fc(torch.cat([self.user(u), self.bag(items), self.dense(d)], 1))

    class StackedLstm(nn.Module):  # dropout between the layers: torch cannot export it in training mode
        def __init__(self):
            super().__init__()
            self.l = nn.LSTM(8, 16, num_layers=2, dropout=0.2, batch_first=True)
        def forward(self, x):
            return self.l(x)[0]

    class SpatialDropout(nn.Module):  # channel and alpha dropouts: torch cannot export them in training mode
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(4, 4, 3, padding=1)
            self.d2 = nn.Dropout2d(0.25)
            self.ad = nn.AlphaDropout(0.1)
        def forward(self, x):
            return self.ad(self.d2(self.c(x)))

    class ZeroedBias(nn.Module):  # Swin V2's attention: the key's third of a clone of the qkv bias zeroed
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(8, 24)
        def forward(self, x):
            bias = self.qkv.bias.clone()
            bias[8:16].zero_()
            return F.linear(x, self.qkv.weight, bias)

    def swin_v2_t():  # torchvision's: each of its 12 SwinTransformerBlockV2 does the same
        import torchvision
        return torchvision.models.swin_v2_t()

    class FirstFour(nn.Module):  # the batch typed in: x[:4] is a constant slice in the trace
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(64, 64)
        def forward(self, x):
            return self.l(x[:4])
''')


class CheckTest(unittest.TestCase):
    """gpucast-export's checks: the cost follows the batch (a part no sample pays for is allowed
    and named, a size fixed while tracing is refused); the model's buffers, graph inputs like the
    parameters in a weight-free export, are named in the file and are not counted as parameters."""

    @classmethod
    def setUpClass(cls):
        ExportHintsTest.setUpClass.__func__(cls)
        with open(cls.models, "w") as f:
            f.write(BATCH_MODELS)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    export = ExportHintsTest.export

    def test_work_on_parameters_alone_is_named_by_hand_count(self):
        p = self.export("Latents", ["x=float32[B,10,64]"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # q(lat): 2 x 32 x 64 x 64 multiply-adds plus its bias over 32 x 64: the same at every batch.
        fixed = 2 * 32 * 64 * 64 + 32 * 64
        self.assertIn(f"note: {fixed:,} forward FLOPs do not grow with the batch", p.stdout)

    def test_buffers_are_named_and_not_counted(self):
        p = self.export("Buffers", ["x=float32[B,3,16]"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("torch counts 12 parameters, gpucast analyze the same", p.stdout)
        import onnx
        meta = {kv.key: kv.value for kv in onnx.load(os.path.join(self.tmp.name, "Buffers.onnx")).metadata_props}
        self.assertEqual(sorted(meta["gpucast.buffers"].split("\n")), ["mean", "pe", "std"])

    def test_frozen_parameters_are_named_and_not_trained(self):
        p = self.export("FineTune", ["x=float32[B,8]"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # 8·16 + 16 frozen, 16·2 + 2 trained: torch counts all 178
        self.assertIn("torch counts 178 parameters, gpucast analyze the same", p.stdout)
        self.assertIn("note: 144 of the parameters are frozen (requires_grad off, 2 tensor(s))", p.stdout)
        path = os.path.join(self.tmp.name, "FineTune.onnx")
        out = subprocess.run([self.gpucast, "analyze", path, "--batch", "4", "--json"], capture_output=True,
                             text=True, check=True).stdout
        import json
        t = json.loads(out)["totals"]
        self.assertEqual((t["params"], t["frozen_params"]), (178, 144))
        text = subprocess.run([self.gpucast, "analyze", path, "--batch", "4"], capture_output=True, text=True,
                              check=True).stdout
        self.assertIn("frozen 0.000144 M of the params (no gradient, no optimizer state)", text)
        # Only the head computes a gradient: dW 2·4·16·2 = 256 and db (a column sum, 4·2 = 8); no
        # gradient of its input, so nothing before it runs a backward.
        self.assertEqual(t["backward_flops"], 2 * 4 * 16 * 2 + 4 * 2)

    def test_sparse_gradient_tables_are_named_and_their_gradient_is_the_rows_looked_up(self):
        p = self.export("SparseTables", ["u=int64[B]", "items=int64[B,6]", "d=int64[B]"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # 1000·8 + 500·8 + 200·8 + 24 + 1 = 13,625
        self.assertIn("torch counts 13,625 parameters, gpucast analyze the same", p.stdout)
        self.assertIn("note: 2 embedding table(s) with sparse gradients (sparse=True)", p.stdout)
        self.assertIn("state the optimizer when predicting (--attr optimizer=sgd", p.stdout)
        path = os.path.join(self.tmp.name, "SparseTables.onnx")
        import onnx
        meta = {kv.key: kv.value for kv in onnx.load(path).metadata_props}
        self.assertEqual(sorted(meta["gpucast.sparse_grad"].split("\n")), ["bag.weight", "user.weight"])
        out = subprocess.run([self.gpucast, "analyze", path, "--batch", "16", "--json"], capture_output=True,
                             text=True, check=True).stdout
        import json
        t = json.loads(out)["totals"]
        self.assertEqual((t["params"], t["sparse_grad_params"]), (13625, 1000 * 8 + 500 * 8))
        # At batch 16 the step looks up 16 user rows and 16·6 bag rows, each 8 fp32 values and an
        # int64 index: (16 + 96) · (8·4 + 8) = 4,480 bytes; the dense table's gradient is its own.
        self.assertEqual(t["sparse_grad_bytes"], (16 + 96) * (8 * 4 + 8))
        text = subprocess.run([self.gpucast, "analyze", path, "--batch", "16"], capture_output=True, text=True,
                              check=True).stdout
        self.assertIn("sparse gradients: tables of 0.012 M params, 0.00448 MB of looked-up rows a step", text)

    def test_a_stacked_rnns_dropout_is_left_out_with_a_note(self):
        p = self.export("StackedLstm", ["x=float32[B,5,8]"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # torch: layer 1 4·16·(8+16) + 2·4·16, layer 2 4·16·(16+16) + 2·4·16 = 1,664 + 2,176
        self.assertIn("torch counts 3,840 parameters, gpucast analyze the same", p.stdout)
        self.assertIn("note: 1 recurrent module(s) exported without their dropout between layers", p.stdout)

    def test_channel_and_alpha_dropout_export_as_the_computation_torch_runs(self):
        p = self.export("SpatialDropout", ["x=float32[B,4,6,6]"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("torch counts 148 parameters, gpucast analyze the same", p.stdout)
        self.assertIn("note: 2 dropout module(s) torch cannot export in training mode", p.stdout)
        import onnx
        g = onnx.load(os.path.join(self.tmp.name, "SpatialDropout.onnx")).graph
        self.assertEqual(sum(n.op_type == "Dropout" for n in g.node), 2)  # one mask each

    def test_the_dropout_rewrite_is_torchs_dropout(self):
        # Against torch's own (eager) implementations: a channel dropout zeroes whole channels and
        # scales the rest by 1 / (1 - p), as F.dropout2d; an alpha dropout keeps a standard normal
        # input's mean 0 and variance 1 and takes the values F.alpha_dropout takes (x * a + b kept,
        # alpha' * a + b dropped), the kept share 1 - p.
        import importlib.machinery, importlib.util, math
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        loader = importlib.machinery.SourceFileLoader("gpucast_export", EXPORT)
        spec = importlib.util.spec_from_loader("gpucast_export", loader)
        tool = importlib.util.module_from_spec(spec)
        loader.exec_module(tool)
        torch.manual_seed(0)
        m = nn.Sequential(nn.Dropout2d(0.3), nn.AlphaDropout(0.2))
        self.assertEqual(tool.dropout_by_mask(m), 2)
        m.train()
        x = torch.randn(64, 32, 5, 5)
        y = m[0](x)
        per_channel = (y == 0).flatten(2).all(-1) | torch.isclose(y, x / 0.7).flatten(2).all(-1)
        self.assertTrue(bool(per_channel.all()))
        ref = F.dropout2d(x, 0.3, training=True)
        self.assertAlmostEqual(float((y == 0).float().mean()), float((ref == 0).float().mean()), delta=0.03)
        z = torch.randn(1000, 1000)
        w, ref = m[1](z), F.alpha_dropout(z, 0.2, training=True)
        for got, want in ((float(w.mean()), float(ref.mean())), (float(w.var()), float(ref.var()))):
            self.assertAlmostEqual(got, want, delta=0.01)
        a = 1 / math.sqrt((1.7580993408473766 ** 2 * 0.2 + 1) * 0.8)
        dropped = w[torch.isclose(w, torch.full_like(w, (-1.7580993408473766) * a + 1.7580993408473766 * a * 0.2))]
        self.assertAlmostEqual(dropped.numel() / w.numel(), 0.2, delta=0.01)
        m.eval()
        self.assertTrue(torch.equal(m(x), x))
        # A subclass with a forward of its own is the user's: left as it is.
        class Own(nn.Dropout2d):
            def forward(self, x):
                return x * 2
        class Kept(nn.Dropout2d):  # torch's forward
            pass
        self.assertEqual(tool.dropout_by_mask(nn.Sequential(Own(0.5), Kept(0.5))), 1)

    def test_zero_on_part_of_a_tensor_exports_as_zeros(self):
        p = self.export("ZeroedBias", ["x=float32[B,8]"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("torch counts 216 parameters, gpucast analyze the same", p.stdout)  # 8·24 + 24
        self.assertIn("note: 1 Tensor.zero_() call(s) on part of a tensor exported as zeros", p.stdout)
        import onnx
        g = onnx.load(os.path.join(self.tmp.name, "ZeroedBias.onnx")).graph
        # the zeros written into the bias (torch 1.13 drops some in-place writes; not this one)
        self.assertTrue(any(n.op_type == "ScatterND" and n.input[0] == "qkv.bias" for n in g.node))
        # torchvision's Swin V2 at 32 x 32 (its windows are padded: a smaller image exports no faster)
        p = self.export("swin_v2_t", ["images=float32[B,3,32,32]"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("torch counts 28,351,570 parameters, gpucast analyze the same", p.stdout)
        self.assertIn("note: 12 Tensor.zero_() call(s) on part of a tensor exported as zeros", p.stdout)

    def test_a_size_fixed_while_tracing_is_refused(self):
        p = self.export("FirstFour", ["x=float32[B,64]"])
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("the cost does not follow the batch", p.stderr)
