"""A small DDPM-style diffusion denoiser, as a user's own model (docs/models.md): a sinusoidal
timestep embedding, ResBlocks of GroupNorm -> SiLU -> conv with the embedding added, attention over
the pixels in the middle, F.interpolate(scale_factor=2) upsampling and skip concatenation.
forward(x, t) takes the noisy images and the (integer) timesteps.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class ResBlock(nn.Module):
    """GroupNorm -> SiLU -> conv, timestep embedding added, dropout, GroupNorm -> SiLU -> conv."""

    def __init__(self, cin, cout, tdim, groups=8, p=0.1):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.temb = nn.Linear(tdim, cout)
        self.norm2 = nn.GroupNorm(groups, cout)
        self.drop = nn.Dropout(p)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, t):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(F.silu(t))[:, :, None, None]
        h = self.conv2(self.drop(F.silu(self.norm2(h))))
        return h + self.skip(x)


class SelfAttention2d(nn.Module):
    """Single-head self-attention over the pixels of a feature map (as DDPM's middle block)."""

    def __init__(self, c, groups=8):
        super().__init__()
        self.norm = nn.GroupNorm(groups, c)
        self.qkv = nn.Conv2d(c, 3 * c, 1)
        self.proj = nn.Conv2d(c, c, 1)

    def forward(self, x):
        b, c, h, w = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(b, 3, c, h * w).unbind(1)
        att = torch.softmax(q.transpose(1, 2) @ k / math.sqrt(c), dim=-1)  # [b, hw, hw]
        y = (v @ att.transpose(1, 2)).reshape(b, c, h, w)
        return x + self.proj(y)


class DiffusionUNet(nn.Module):
    """A DDPM-style denoiser: sinusoidal timestep embedding, ResBlocks with GroupNorm and SiLU,
    strided-conv downsampling, attention in the middle, F.interpolate(nearest) upsampling and
    skip concatenation."""

    def __init__(self, ch=32, mults=(1, 2), tdim=128):
        super().__init__()
        self.ch = ch
        self.temb = nn.Sequential(nn.Linear(ch, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
        self.conv_in = nn.Conv2d(3, ch, 3, padding=1)
        chans = [ch * m for m in mults]
        self.down, self.downsample = nn.ModuleList(), nn.ModuleList()
        c = ch
        for i, co in enumerate(chans):
            self.down.append(ResBlock(c, co, tdim))
            c = co
            self.downsample.append(nn.Conv2d(c, c, 3, stride=2, padding=1) if i < len(chans) - 1 else nn.Identity())
        self.mid1, self.mid_attn, self.mid2 = ResBlock(c, c, tdim), SelfAttention2d(c), ResBlock(c, c, tdim)
        self.up, self.upconv = nn.ModuleList(), nn.ModuleList()
        for i, co in reversed(list(enumerate(chans))):
            self.up.append(ResBlock(c + co, co, tdim))
            c = co
            self.upconv.append(nn.Conv2d(c, c, 3, padding=1) if i > 0 else nn.Identity())
        self.out = nn.Sequential(nn.GroupNorm(8, c), nn.SiLU(), nn.Conv2d(c, 3, 3, padding=1))

    def timestep_embedding(self, t):
        half = self.ch // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
        args = t.float()[:, None] * freqs[None]
        return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)

    def forward(self, x, t):
        temb = self.temb(self.timestep_embedding(t))
        h = self.conv_in(x)
        skips = []
        for block, down in zip(self.down, self.downsample):
            h = block(h, temb)
            skips.append(h)
            h = down(h)
        h = self.mid2(self.mid_attn(self.mid1(h, temb)), temb)
        for block, upconv in zip(self.up, self.upconv):
            s = skips.pop()
            if h.shape[-1] != s.shape[-1]:
                h = F.interpolate(h, scale_factor=2.0, mode="nearest")
            h = upconv(block(torch.cat([h, s], dim=1), temb))
        return self.out(h)


def build(**config):
    return DiffusionUNet(**config)
