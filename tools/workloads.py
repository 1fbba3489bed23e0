"""The 11 measured training workloads of data/lucid/single_data.csv, rebuilt in plain PyTorch.

One module for the networks, their ONNX export specs and the catalog facts, shared by
tools/export_workloads.py (graph export) and tools/measure/measure.py (the measurement harness),
so both always use the same networks. Sizes follow ../shared/workloads.md; every assumption made
where that spec is silent is listed in docs/workloads.md.

Run with Debian's /usr/bin/python3 (python3-torch 1.13, python3-torchvision 0.14).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

SEED = 0

# ---------------------------------------------------------------- BERT-base for QA


class BertLayer(nn.Module):
    """One HF BertLayer: self-attention + output LayerNorm, GELU FFN + output LayerNorm."""

    def __init__(self, hidden=768, heads=12, ffn=3072, p=0.1, eps=1e-12):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attn_dropout = nn.Dropout(p)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_out_dropout = nn.Dropout(p)
        self.attn_norm = nn.LayerNorm(hidden, eps=eps)
        self.intermediate = nn.Linear(hidden, ffn)
        self.output = nn.Linear(ffn, hidden)
        self.out_dropout = nn.Dropout(p)
        self.out_norm = nn.LayerNorm(hidden, eps=eps)

    def split_heads(self, x):  # (b, s, h*d) -> (b, h, s, d)
        b, s = x.size(0), x.size(1)
        return x.view(b, s, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, mask_bias):
        q = self.split_heads(self.query(x))
        k = self.split_heads(self.key(x))
        v = self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim) + mask_bias
        probs = self.attn_dropout(torch.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(ctx.size(0), ctx.size(1), self.heads * self.head_dim)
        x = self.attn_norm(self.attn_out_dropout(self.attn_out(ctx)) + x)
        h = F.gelu(self.intermediate(x))
        return self.out_norm(self.out_dropout(self.output(h)) + x)


class BertForQA(nn.Module):
    """bert-base-uncased + QA head, as HF BertForQuestionAnswering (no pooler: QA does not use it)."""

    def __init__(self, vocab=30522, hidden=768, layers=12, heads=12, ffn=3072, max_pos=512,
                 type_vocab=2, p=0.1):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_pos, hidden)
        self.token_type = nn.Embedding(type_vocab, hidden)
        self.emb_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.emb_dropout = nn.Dropout(p)
        self.layers = nn.ModuleList([BertLayer(hidden, heads, ffn, p) for _ in range(layers)])
        self.qa_outputs = nn.Linear(hidden, 2)

    def forward(self, input_ids, token_type_ids, attention_mask):
        seq = input_ids.size(1)
        # Positions 0..seq-1: a slice of the position table (same values as HF's arange lookup).
        pos = self.position.weight[:seq].unsqueeze(0)
        x = self.word(input_ids) + pos + self.token_type(token_type_ids)
        x = self.emb_dropout(self.emb_norm(x))
        mask_bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask_bias)
        start, end = self.qa_outputs(x).split(1, dim=-1)
        return start.squeeze(-1), end.squeeze(-1)


class BertForSeqCls(BertForQA):
    """bert-base + sequence-classification head, as HF BertForSequenceClassification: the pooler
    (Linear 768->768 + tanh on the first token), dropout, Linear 768->labels (2 assumed: the
    MIGProfiler data does not record the label count; the head is 0.001% of the FLOPs)."""

    def __init__(self, labels=2, hidden=768, p=0.1, **kw):
        super().__init__(hidden=hidden, p=p, **kw)
        del self.qa_outputs
        self.pooler = nn.Linear(hidden, hidden)
        self.cls_dropout = nn.Dropout(p)
        self.classifier = nn.Linear(hidden, labels)

    def forward(self, input_ids, token_type_ids, attention_mask):
        seq = input_ids.size(1)
        pos = self.position.weight[:seq].unsqueeze(0)
        x = self.word(input_ids) + pos + self.token_type(token_type_ids)
        x = self.emb_dropout(self.emb_norm(x))
        mask_bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask_bias)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return self.classifier(self.cls_dropout(pooled))


# ---------------------------------------------------------------- DCGAN (pytorch/examples)


class DCGANGenerator(nn.Module):
    def __init__(self, nz=100, ngf=64, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, noise):
        return self.main(noise)


class DCGANDiscriminator(nn.Module):
    def __init__(self, ndf=64, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 8), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False), nn.Sigmoid())

    def forward(self, image):
        return self.main(image).reshape(-1)  # example: .view(-1, 1).squeeze(1)


# ---------------------------------------------------------------- CIFAR-10 CNNs (pytorch-cifar style)


class EffBlock(nn.Module):
    """expand 1x1 + depthwise kxk + project 1x1 (+BN each), squeeze-excite on the block output."""

    def __init__(self, cin, cout, expansion, stride, kernel):
        super().__init__()
        self.stride = stride
        planes = expansion * cin
        self.conv1 = nn.Conv2d(cin, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel, stride, kernel // 2, groups=planes, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride == 1 and cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.fc1 = nn.Conv2d(cout, cout // 16, 1)  # squeeze-excite c -> c/16 -> c
        self.fc2 = nn.Conv2d(cout // 16, cout, 1)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        w = F.adaptive_avg_pool2d(out, 1)
        w = torch.sigmoid(self.fc2(F.relu(self.fc1(w))))
        out = out * w
        return out + self.shortcut(x) if self.stride == 1 else out


class EfficientNetB0Cifar(nn.Module):
    # (expansion, out channels, repeats, stride), depthwise kernel per stage
    CFG = [(1, 16, 1, 2), (6, 24, 2, 1), (6, 40, 2, 2), (6, 80, 3, 2), (6, 112, 3, 1),
           (6, 192, 4, 2), (6, 320, 1, 2)]
    KERNELS = [3, 3, 5, 3, 5, 5, 3]

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        layers, cin = [], 32
        for (e, c, n, s), k in zip(self.CFG, self.KERNELS):
            for i in range(n):
                layers.append(EffBlock(cin, c, e, s if i == 0 else 1, k))
                cin = c
        self.layers = nn.Sequential(*layers)
        self.linear = nn.Linear(320, num_classes)

    def forward(self, image):
        out = self.layers(F.relu(self.bn1(self.conv1(image))))
        out = F.adaptive_avg_pool2d(out, 1).flatten(1)  # map is already 1x1 at 32x32 input
        return self.linear(out)


class MBV2Block(nn.Module):
    def __init__(self, cin, cout, expansion, stride):
        super().__init__()
        self.stride = stride
        planes = expansion * cin
        self.conv1 = nn.Conv2d(cin, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, groups=planes, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride == 1 and cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return out + self.shortcut(x) if self.stride == 1 else out


class MobileNetV2Cifar(nn.Module):
    CFG = [(1, 16, 1, 1), (6, 24, 2, 1), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
           (6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        layers, cin = [], 32
        for e, c, n, s in self.CFG:
            for i in range(n):
                layers.append(MBV2Block(cin, c, e, s if i == 0 else 1))
                cin = c
        self.layers = nn.Sequential(*layers)
        self.conv2 = nn.Conv2d(320, 1280, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(1280)
        self.linear = nn.Linear(1280, num_classes)

    def forward(self, image):
        out = self.layers(F.relu(self.bn1(self.conv1(image))))
        out = F.relu(self.bn2(self.conv2(out)))
        out = F.avg_pool2d(out, 4).flatten(1)
        return self.linear(out)


class VGG11Cifar(nn.Module):
    CFG = [64, 'M', 128, 'M', 256, 256, 'M', 512, 512, 'M', 512, 512, 'M']

    def __init__(self, num_classes=10):
        super().__init__()
        layers, cin = [], 3
        for x in self.CFG:
            if x == 'M':
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(cin, x, 3, padding=1), nn.BatchNorm2d(x), nn.ReLU(inplace=True)]
                cin = x
        layers.append(nn.AvgPool2d(1, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(512, num_classes)

    def forward(self, image):
        return self.classifier(self.features(image).flatten(1))


# ---------------------------------------------------------------- LSTM language model


class LSTMLM(nn.Module):
    """pytorch/examples word_language_model (LSTM, untied): time-major (seq, batch).

    nn.LSTM(num_layers=2, dropout=0.2) is written as two 1-layer LSTMs with a Dropout between
    them (the same computation): torch's ONNX exporter refuses inter-layer dropout in training mode.
    """

    def __init__(self, ntoken=33278, ninp=200, nhid=200, p=0.2):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.drop_in = nn.Dropout(p)
        self.rnn1 = nn.LSTM(ninp, nhid)
        self.drop_mid = nn.Dropout(p)
        self.rnn2 = nn.LSTM(nhid, nhid)
        self.drop_out = nn.Dropout(p)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, tokens, h0, c0):
        x = self.drop_in(self.encoder(tokens))
        y1, (h1, c1) = self.rnn1(x, (h0[0:1], c0[0:1]))
        y2, (h2, c2) = self.rnn2(self.drop_mid(y1), (h0[1:2], c0[1:2]))
        logits = self.decoder(self.drop_out(y2))
        return F.log_softmax(logits, dim=-1), torch.cat([h1, h2], 0), torch.cat([c1, c2], 0)


# ---------------------------------------------------------------- NeuMF


class NeuMF(nn.Module):
    def __init__(self, users=6040, items=3706, gmf_dim=32, mlp_dim=128, layers=(256, 128, 64, 32)):
        super().__init__()
        self.gmf_user = nn.Embedding(users, gmf_dim)
        self.gmf_item = nn.Embedding(items, gmf_dim)
        self.mlp_user = nn.Embedding(users, mlp_dim)
        self.mlp_item = nn.Embedding(items, mlp_dim)
        mlp = []
        for a, b in zip(layers[:-1], layers[1:]):
            mlp += [nn.Linear(a, b), nn.ReLU()]
        self.mlp = nn.Sequential(*mlp)
        self.predict = nn.Linear(gmf_dim + layers[-1], 1)

    def forward(self, user, item):
        gmf = self.gmf_user(user) * self.gmf_item(item)
        mlp = self.mlp(torch.cat([self.mlp_user(user), self.mlp_item(item)], -1))
        return self.predict(torch.cat([gmf, mlp], -1)).view(-1)


# ---------------------------------------------------------------- RL (stable-baselines3 MlpPolicy)


class PPOPolicy(nn.Module):
    """SB3 ActorCriticPolicy for a Discrete(4) action space: separate tanh MLPs for pi and vf."""

    def __init__(self, obs=8, actions=4, hidden=64):
        super().__init__()
        self.policy_net = nn.Sequential(nn.Linear(obs, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.value_net_body = nn.Sequential(nn.Linear(obs, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.action_net = nn.Linear(hidden, actions)
        self.value_net = nn.Linear(hidden, 1)

    def forward(self, obs):
        return self.action_net(self.policy_net(obs)), self.value_net(self.value_net_body(obs))


class TD3Actor(nn.Module):
    def __init__(self, obs=24, act=4):
        super().__init__()
        self.mu = nn.Sequential(nn.Linear(obs, 400), nn.ReLU(), nn.Linear(400, 300), nn.ReLU(),
                                nn.Linear(300, act), nn.Tanh())

    def forward(self, obs):
        return self.mu(obs)


class TD3Critic(nn.Module):
    """One of SB3's twin Q-networks: Q(obs, action) on the concatenation."""

    def __init__(self, obs=24, act=4):
        super().__init__()
        self.q = nn.Sequential(nn.Linear(obs + act, 400), nn.ReLU(), nn.Linear(400, 300), nn.ReLU(),
                               nn.Linear(300, 1))

    def forward(self, obs, action):
        return self.q(torch.cat([obs, action], 1))


# ---------------------------------------------------------------- PointNet classification


class STN3d(nn.Module):
    """Input transform net of fxia22/pointnet.pytorch (BN after every layer but the last)."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2, self.conv3 = nn.Conv1d(3, 64, 1), nn.Conv1d(64, 128, 1), nn.Conv1d(128, 1024, 1)
        self.fc1, self.fc2, self.fc3 = nn.Linear(1024, 512), nn.Linear(512, 256), nn.Linear(256, 9)
        self.bn1, self.bn2, self.bn3 = nn.BatchNorm1d(64), nn.BatchNorm1d(128), nn.BatchNorm1d(1024)
        self.bn4, self.bn5 = nn.BatchNorm1d(512), nn.BatchNorm1d(256)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.relu(self.bn3(self.conv3(x)))
        x = torch.max(x, 2)[0]
        x = F.relu(self.bn4(self.fc1(x)))
        x = F.relu(self.bn5(self.fc2(x)))
        x = self.fc3(x) + torch.eye(3, dtype=x.dtype, device=x.device).view(1, 9)
        return x.view(-1, 3, 3)


class PointNetCls(nn.Module):
    def __init__(self, k=16):
        super().__init__()
        self.stn = STN3d()
        self.conv1, self.conv2, self.conv3 = nn.Conv1d(3, 64, 1), nn.Conv1d(64, 128, 1), nn.Conv1d(128, 1024, 1)
        self.bn1, self.bn2, self.bn3 = nn.BatchNorm1d(64), nn.BatchNorm1d(128), nn.BatchNorm1d(1024)
        self.fc1, self.fc2, self.fc3 = nn.Linear(1024, 512), nn.Linear(512, 256), nn.Linear(256, k)
        self.dropout = nn.Dropout(0.3)
        self.bn4, self.bn5 = nn.BatchNorm1d(512), nn.BatchNorm1d(256)

    def forward(self, points):  # (batch, 3, n)
        trans = self.stn(points)
        x = torch.bmm(points.transpose(2, 1), trans).transpose(2, 1)
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = self.bn3(self.conv3(x))
        x = torch.max(x, 2)[0]
        x = F.relu(self.bn4(self.fc1(x)))
        x = F.relu(self.bn5(self.dropout(self.fc2(x))))
        return F.log_softmax(self.fc3(x), dim=1)


# ---------------------------------------------------------------- the workload table

# A graph: the part name (file suffix), the module factory, the data inputs as
# (name, dims with symbolic names as strings, dtype, integer high bound for ids or None), the output
# names with their dims, and how often one training step runs it: `repeat` forward+backward passes
# and `forward_only` forward passes without backward (averaged over steps, see docs/workloads.md).
def _g(part, make, inputs, outputs, repeat=1, forward_only=0):
    return dict(part=part, make=make, inputs=inputs, outputs=outputs, repeat=repeat,
                forward_only=forward_only)


F32, I64 = torch.float32, torch.int64
IMG32 = [("image", ["batch", 3, 32, 32], F32, None)]
LOGITS10 = [("logits", ["batch", 10])]
CIFAR_ATTRS = dict(loader_workers=2, data_on_gpu=0, rl_env=0, optimizer="sgd_momentum")

WORKLOADS = [
    dict(model="BERT", dataset="SQuAD", dims={"seq": 384}, tiny_dims={"seq": 16},
         attrs=dict(loader_workers=0, data_on_gpu=0, rl_env=0, optimizer="adamw"),
         notes="bert-base-uncased QA (12x768, 12 heads, FFN 3072), plain torch; seq 384; features "
               "precomputed, loader in-process",
         graphs=[_g("", BertForQA,
                    [("input_ids", ["batch", "seq"], I64, 30522), ("token_type_ids", ["batch", "seq"], I64, 2),
                     ("attention_mask", ["batch", "seq"], I64, 2)],
                    [("start_logits", ["batch", "seq"]), ("end_logits", ["batch", "seq"])])]),
    dict(model="DCGAN", dataset="LSUN", dims={}, attrs=dict(loader_workers=2, data_on_gpu=0, rl_env=0, optimizer="adam"),
         notes="per step: D(real), G(noise), D(fake) for D loss, D(fake) for G loss: D 3 fwd+bwd, G 1; "
               "images made per sample on the CPU (random->PIL->tensor), 2 workers",
         graphs=[_g("generator", DCGANGenerator, [("noise", ["batch", 100, 1, 1], F32, None)],
                    [("fake", ["batch", 3, 64, 64])], repeat=1),
                 _g("discriminator", DCGANDiscriminator, [("image", ["batch", 3, 64, 64], F32, None)],
                    [("prob", ["batch"])], repeat=3)]),
    dict(model="EfficientNet", dataset="CIFAR-10", dims={}, attrs=CIFAR_ATTRS,
         notes="EfficientNet-B0 for CIFAR (ReLU, SE c->c/16->c on block output); CIFAR from disk, "
               "crop+flip+normalise on the CPU, 2 workers",
         graphs=[_g("", EfficientNetB0Cifar, IMG32, LOGITS10)]),
    dict(model="LSTM", dataset="Wikitext2", dims={"seq": 35}, tiny_dims={"seq": 5},
         attrs=dict(loader_workers=0, data_on_gpu=1, rl_env=0, optimizer="sgd"),
         notes="2-layer LSTM LM 200/200, V=33278, bptt 35, time-major; corpus on the GPU, state carried",
         graphs=[_g("", LSTMLM,
                    [("tokens", ["seq", "batch"], I64, 33278), ("h0", [2, "batch", 200], F32, None),
                     ("c0", [2, "batch", 200], F32, None)],
                    [("log_probs", ["seq", "batch", 33278]), ("hn", [2, "batch", 200]),
                     ("cn", [2, "batch", 200])])]),
    dict(model="MobileNetV2", dataset="CIFAR-10", dims={}, attrs=CIFAR_ATTRS,
         notes="MobileNetV2 for CIFAR (stride-1 stem and stage 2); data as EfficientNet",
         graphs=[_g("", MobileNetV2Cifar, IMG32, LOGITS10)]),
    dict(model="NeuMF", dataset="MovieLens", dims={}, attrs=dict(loader_workers=2, data_on_gpu=0, rl_env=0, optimizer="sgd_momentum"),
         notes="NeuMF (GMF 32 + MLP 256-128-64-32), 6040 users x 3706 items; Python dataset with 4 "
               "negatives per positive, 2 workers",
         graphs=[_g("", NeuMF, [("user", ["batch"], I64, 6040), ("item", ["batch"], I64, 3706)],
                    [("logit", ["batch"])])]),
    dict(model="PPO", dataset="LunarLander", dims={}, attrs=dict(loader_workers=0, data_on_gpu=0, rl_env=1, optimizer="adam"),
         notes="SB3 PPO MlpPolicy (pi and vf 8-64-64 tanh); batch = minibatch of one gradient step; "
               "per 10*2048/batch gradient steps the CPU env runs 2048 steps with batch-1 forwards",
         graphs=[_g("", PPOPolicy, [("obs", ["batch", 8], F32, None)],
                    [("action_logits", ["batch", 4]), ("value", ["batch", 1])])]),
    dict(model="PointNet", dataset="ShapeNet", dims={}, attrs=dict(loader_workers=2, data_on_gpu=0, rl_env=0, optimizer="adam"),
         notes="PointNet classification with input transform net, 2500 points, 16 classes; each "
               "sample parsed from text on the CPU, 2 workers",
         graphs=[_g("", PointNetCls, [("points", ["batch", 3, 2500], F32, None)],
                    [("log_probs", ["batch", 16])])]),
    dict(model="ResNet50", dataset="ImageNet", dims={}, attrs=dict(loader_workers=0, data_on_gpu=1, rl_env=0, optimizer="sgd"),
         notes="torchvision resnet50; one random batch made once on the GPU and reused",
         graphs=[_g("", lambda: torchvision.models.resnet50(), [("image", ["batch", 3, 224, 224], F32, None)],
                    [("logits", ["batch", 1000])])]),
    dict(model="TD3", dataset="BipedalWalker", dims={}, attrs=dict(loader_workers=0, data_on_gpu=0, rl_env=1, optimizer="adam"),
         notes="SB3 TD3 (actor 24-400-300-4, twin critics 28-400-300-1); per gradient step: 2 critics "
               "fwd+bwd, critic-1 and actor fwd+bwd every 2nd step, target actor+2 critics forward; "
               "plus one batch-1 actor forward per env step (1 env step per gradient step)",
         graphs=[_g("actor", TD3Actor, [("obs", ["batch", 24], F32, None)], [("action", ["batch", 4])],
                    repeat=0.5, forward_only=1),
                 _g("critic", TD3Critic, [("obs", ["batch", 24], F32, None), ("action", ["batch", 4], F32, None)],
                    [("q", ["batch", 1])], repeat=2.5, forward_only=2)]),
    dict(model="VGG", dataset="CIFAR-10", dims={}, attrs=CIFAR_ATTRS,
         notes="VGG11 for CIFAR (conv+BN+ReLU, Linear 512->10); data as EfficientNet",
         graphs=[_g("", VGG11Cifar, IMG32, LOGITS10)]),
    # MIGProfiler's BERT (../shared/data/migprofiler-a100/bert_train.csv): rows carry their own
    # seq_length (-> dim "seq") and loader_workers; the catalog's values are the defaults.
    dict(model="bert-base", dataset="amazon-review", dims={"seq": 64}, tiny_dims={"seq": 16},
         attrs=dict(loader_workers=6, data_on_gpu=0, rl_env=0, optimizer="adamw"),
         notes="HF bert-base sequence classification (pooler + Linear 768->2), fp32, AdamW; "
               "reviews tokenised by a DataLoader with 6 workers; seq from the row",
         graphs=[_g("", BertForSeqCls,
                    [("input_ids", ["batch", "seq"], I64, 30522), ("token_type_ids", ["batch", "seq"], I64, 2),
                     ("attention_mask", ["batch", "seq"], I64, 2)],
                    [("logits", ["batch", 2])])]),
]
# Workloads whose measured `speed` column is not training samples per second of the step the
# graphs describe (a PPO "sample" spans a rollout and 10 epochs of minibatches; a TD3 one an
# episode of unrecorded length): their step time is unknown (docs/workloads.md).
SPEED_NOT_SAMPLES = {("PPO", "LunarLander"), ("TD3", "BipedalWalker")}


def graph_file(w, g):
    """models/ file name of graph g of workload w."""
    name = w["model"].lower()
    return f"{name}_{g['part']}.onnx" if g["part"] else f"{name}.onnx"


def find(model, dataset):
    for w in WORKLOADS:
        if w["model"] == model and w["dataset"] == dataset:
            return w
    raise KeyError(f"unknown workload {model}/{dataset}")


def build(g, seed=SEED):
    """The module of graph g, deterministically initialised."""
    torch.manual_seed(seed)
    return g["make"]()


def example_inputs(g, batch, dims, device="cpu", seed=SEED):
    """Random data inputs for graph g at this batch and symbolic dims (ids within their range)."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _name, shape, dtype, high in g["inputs"]:
        concrete = [batch if d == "batch" else dims[d] if isinstance(d, str) else d for d in shape]
        if dtype == I64:
            t = torch.randint(0, high, concrete, generator=gen, dtype=I64)
        else:
            t = torch.randn(concrete, generator=gen)
        out.append(t.to(device))
    return tuple(out)
