"""One training job per catalog workload: the networks of tools/workloads.py, the stated loss and
optimizer, and an input pipeline doing the CPU work ../shared/workloads.md describes.

Job(workload, batch, amp, device, tiny).step() runs one measured step and returns the number of
training samples it consumed (the unit of the CSV's `speed`). tiny=True (the --dry-run) shrinks
sequence lengths, rollouts and data sets so a step runs in well under a second on a CPU.
"""
import os
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import workloads as W  # noqa: E402


class _Synthetic(torch.utils.data.Dataset):
    """n samples made on the CPU by fn(index) (the per-sample host work of the real loader)."""

    def __init__(self, n, fn):
        self.n, self.fn = n, fn

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.fn(i)


def _cifar_sample(i):
    import torchvision.transforms as T
    from PIL import Image
    rng = np.random.default_rng(i)
    img = Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8))
    t = T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(),
                   T.Normalize((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010))])
    return t(img), int(rng.integers(10))


def _lsun_sample(i):
    import torchvision.transforms as T
    from PIL import Image
    img = Image.fromarray(np.random.default_rng(i).integers(0, 256, (64, 64, 3), dtype=np.uint8))
    return T.Normalize((0.5,) * 3, (0.5,) * 3)(T.ToTensor()(img))


class _PointFiles:
    """Point clouds written once as text files; each sample is parsed with np.loadtxt."""

    def __init__(self, n, points):
        self.dir = tempfile.mkdtemp(prefix="gpucast-points-")
        rng = np.random.default_rng(0)
        for i in range(n):
            np.savetxt(os.path.join(self.dir, f"{i}.pts"), rng.standard_normal((points, 3)), fmt="%.6f")
        self.n = n

    def __call__(self, i):
        pts = np.loadtxt(os.path.join(self.dir, f"{i % self.n}.pts")).astype(np.float32)
        return torch.from_numpy(pts.T.copy()), i % 16


class _ReviewSample:
    """A tokenized review padded to seq (random ids: MIGProfiler's Amazon reviews are not shipped) and
    a label of 2; made per sample in the loader's workers, as its DataLoader serves them."""

    def __init__(self, seq):
        self.seq = seq

    def __call__(self, i):
        g = torch.Generator().manual_seed(i)
        return (torch.randint(0, 30522, (self.seq,), generator=g), torch.zeros(self.seq, dtype=torch.long),
                torch.ones(self.seq, dtype=torch.long), int(torch.randint(0, 2, (1,), generator=g)))


def _neumf_sample(i):
    """One positive plus 4 sampled negatives (Python-side sampling, as the NCF loader)."""
    rng = np.random.default_rng(i)
    user = int(rng.integers(6040))
    items = [int(x) for x in rng.integers(3706, size=5)]
    return torch.tensor([user] * 5), torch.tensor(items), torch.tensor([1.0, 0, 0, 0, 0])


class _StandInEnv:
    """Random observations, used ONLY by --dry-run when gym is absent (no numbers are recorded)."""

    def __init__(self, obs, act):
        self.obs, self.act, self.rng = obs, act, np.random.default_rng(0)

    def reset(self):
        return self.rng.standard_normal(self.obs).astype(np.float32)

    def step(self, _a):
        return self.reset(), float(self.rng.standard_normal()), bool(self.rng.random() < 0.02), {}


def make_env(name, obs, act, tiny):
    try:
        import gym
        env = gym.make(name)
        return env
    except Exception as e:  # gym or box2d missing
        if tiny:
            return _StandInEnv(obs, act)
        raise RuntimeError(f"{name} needs gym with box2d installed ({e})")


def _reset(env):
    r = env.reset()
    return r[0] if isinstance(r, tuple) else r


def _env_step(env, a):
    r = env.step(a)
    obs, rew, done = r[0], r[1], r[2] or (len(r) == 5 and r[3])
    return obs, rew, done


class Job:
    def __init__(self, workload, batch, amp, device, tiny=False):
        self.w, self.batch, self.amp, self.dev, self.tiny = workload, batch, amp, torch.device(device), tiny
        self.dims = workload.get("tiny_dims", workload["dims"]) if tiny else workload["dims"]
        self.nets = [W.build(g).to(self.dev).train() for g in workload["graphs"]]
        # torch.amp.GradScaler("cuda") from PyTorch 2.3; torch.cuda.amp's (deprecated there) before.
        scaler = (lambda **kw: torch.amp.GradScaler("cuda", **kw)) if hasattr(torch.amp, "GradScaler") \
            else torch.cuda.amp.GradScaler
        self.scaler = scaler(enabled=amp and self.dev.type == "cuda")
        self.workers = 0 if tiny else workload["attrs"]["loader_workers"]
        getattr(self, "_setup_" + workload["model"].lower().replace("-", "_"))()

    # -- helpers
    def _autocast(self):
        return torch.autocast(self.dev.type, enabled=self.amp and self.dev.type == "cuda")

    def _update(self, loss, opt):
        opt.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(opt)
        self.scaler.update()

    def _loader(self, n, fn):
        dl = torch.utils.data.DataLoader(_Synthetic(n, fn), batch_size=self.batch, shuffle=True,
                                         num_workers=self.workers, drop_last=True,
                                         persistent_workers=self.workers > 0)
        while True:
            yield from dl

    def _sgd(self, net, wd=5e-4):
        return torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=wd)

    def step(self):
        return self._step()

    # -- CIFAR classifiers: EfficientNet, MobileNetV2, VGG
    def _setup_cifar(self):
        self.opt = self._sgd(self.nets[0])
        self.data = self._loader(4 * self.batch if self.tiny else 50000, _cifar_sample)
        self._step = self._step_classifier

    _setup_efficientnet = _setup_mobilenetv2 = _setup_vgg = _setup_cifar

    def _step_classifier(self):
        x, y = next(self.data)
        x, y = x.to(self.dev, non_blocking=True), y.to(self.dev, non_blocking=True)
        with self._autocast():
            out = self.nets[0](x)
            loss = F.nll_loss(out, y) if self.w["model"] == "PointNet" else F.cross_entropy(out, y)
        self._update(loss, self.opt)
        return self.batch

    # -- ResNet50: one random batch made once on the GPU
    def _setup_resnet50(self):
        self.opt = self._sgd(self.nets[0], wd=0)
        size = 64 if self.tiny else 224
        self.x = torch.randn(self.batch, 3, size, size, device=self.dev)
        self.y = torch.randint(0, 1000, (self.batch,), device=self.dev)
        self.data = iter(lambda: (self.x, self.y), None)
        self._step = self._step_classifier

    # -- PointNet: text files parsed per sample
    def _setup_pointnet(self):
        self.opt = torch.optim.Adam(self.nets[0].parameters(), lr=0.01)
        n = 2 * self.batch if self.tiny else 512
        self.data = self._loader(n, _PointFiles(min(n, 64), 2500))
        self._step = self._step_classifier

    # -- BERT: features precomputed once, loader in-process
    def _setup_bert(self):
        self.opt = torch.optim.AdamW(self.nets[0].parameters(), lr=5e-5)
        seq, n = self.dims["seq"], 4 * self.batch
        g = torch.Generator().manual_seed(0)
        self.feats = [torch.randint(0, 30522, (n, seq), generator=g), torch.zeros(n, seq, dtype=torch.long),
                      torch.ones(n, seq, dtype=torch.long), torch.randint(0, seq, (n,), generator=g),
                      torch.randint(0, seq, (n,), generator=g)]
        self.i = 0
        self._step = self._step_bert

    def _step_bert(self):
        s = slice(self.i, self.i + self.batch)
        self.i = (self.i + self.batch) % self.feats[0].size(0)
        ids, tt, mask, sp, ep = (t[s].to(self.dev) for t in self.feats)
        with self._autocast():
            start, end = self.nets[0](ids, tt, mask)
            loss = (F.cross_entropy(start, sp) + F.cross_entropy(end, ep)) / 2
        self._update(loss, self.opt)
        return self.batch

    # -- bert-base/amazon-review (MIGProfiler): sequence classification, fp32 or AMP, AdamW, reviews
    #    from a DataLoader with the catalog's workers (6)
    def _setup_bert_base(self):
        self.opt = torch.optim.AdamW(self.nets[0].parameters(), lr=5e-5)
        self.data = self._loader(4 * self.batch if self.tiny else 4096, _ReviewSample(self.dims["seq"]))
        self._step = self._step_bert_base

    def _step_bert_base(self):
        ids, tt, mask, y = (t.to(self.dev, non_blocking=True) for t in next(self.data))
        with self._autocast():
            loss = F.cross_entropy(self.nets[0](ids, tt, mask), y)
        self._update(loss, self.opt)
        return self.batch

    # -- LSTM: corpus on the GPU, batches cut by slicing, state carried
    def _setup_lstm(self):
        self.opt = torch.optim.SGD(self.nets[0].parameters(), lr=0.01)
        self.seq = self.dims["seq"]
        tokens = 2_000_000 if not self.tiny else 20 * self.seq * self.batch
        corpus = torch.randint(0, 33278, (tokens,), generator=torch.Generator().manual_seed(0))
        self.corpus = corpus[: tokens // self.batch * self.batch].view(self.batch, -1).t().contiguous().to(self.dev)
        self.h = torch.zeros(2, self.batch, 200, device=self.dev)
        self.c = torch.zeros_like(self.h)
        self.pos = 0
        self._step = self._step_lstm

    def _step_lstm(self):
        if self.pos + self.seq + 1 > self.corpus.size(0):
            self.pos = 0
        x = self.corpus[self.pos:self.pos + self.seq]
        y = self.corpus[self.pos + 1:self.pos + 1 + self.seq]
        self.pos += self.seq
        with self._autocast():
            logp, h, c = self.nets[0](x, self.h.detach(), self.c.detach())
            loss = F.nll_loss(logp.reshape(-1, logp.size(-1)).float(), y.reshape(-1))
        self._update(loss, self.opt)
        self.h, self.c = h.detach().float(), c.detach().float()
        return self.batch

    # -- NeuMF: 4 negatives per positive; the CSV batch counts (user, item) pairs
    def _setup_neumf(self):
        self.opt = torch.optim.SGD(self.nets[0].parameters(), lr=0.01, momentum=0.9)
        per = max(1, self.batch // 5)
        dl = torch.utils.data.DataLoader(_Synthetic(4 * per if self.tiny else 200000, _neumf_sample),
                                         batch_size=per, shuffle=True, num_workers=self.workers, drop_last=True,
                                         persistent_workers=self.workers > 0)

        def gen():
            while True:
                yield from dl
        self.data = gen()
        self._step = self._step_neumf

    def _step_neumf(self):
        u, i, y = (t.reshape(-1).to(self.dev) for t in next(self.data))
        with self._autocast():
            loss = F.binary_cross_entropy_with_logits(self.nets[0](u, i).float(), y)
        self._update(loss, self.opt)
        return u.numel()

    # -- DCGAN: D(real), G(noise), D(fake) -> D step; D(fake) -> G step
    def _setup_dcgan(self):
        self.optG = torch.optim.Adam(self.nets[0].parameters(), lr=2e-4, betas=(0.5, 0.999))
        self.optD = torch.optim.Adam(self.nets[1].parameters(), lr=2e-4, betas=(0.5, 0.999))
        self.data = self._loader(4 * self.batch if self.tiny else 100000, _lsun_sample)
        self._step = self._step_dcgan

    def _step_dcgan(self):
        G, D = self.nets
        real = next(self.data).to(self.dev)
        ones = torch.ones(self.batch, device=self.dev)
        zeros = torch.zeros(self.batch, device=self.dev)
        with self._autocast():  # BCE on probabilities is autocast-unsafe: compute it in fp32
            d_real = D(real).float()
            fake = G(torch.randn(self.batch, 100, 1, 1, device=self.dev))
            d_fake = D(fake.detach()).float()
        errD = F.binary_cross_entropy(d_real, ones) + F.binary_cross_entropy(d_fake, zeros)
        self._update(errD, self.optD)
        with self._autocast():
            d_gen = D(fake).float()
        self._update(F.binary_cross_entropy(d_gen, ones), self.optG)
        return self.batch

    # -- PPO: 2048-step rollout with batch-1 forwards, then 10 epochs of minibatches
    def _setup_ppo(self):
        self.opt = torch.optim.Adam(self.nets[0].parameters(), lr=3e-4)
        self.env = make_env("LunarLander-v2", 8, 4, self.tiny)
        self.n_steps, self.epochs = (4 * self.batch, 1) if self.tiny else (2048, 10)
        self.obs = _reset(self.env)
        self._step = self._step_ppo

    def _step_ppo(self):
        net = self.nets[0]
        obs, acts, logps, advs = [], [], [], []
        with torch.no_grad():
            for _ in range(self.n_steps):
                o = torch.as_tensor(np.asarray(self.obs, np.float32), device=self.dev).unsqueeze(0)
                logits, v = net(o)
                dist = torch.distributions.Categorical(logits=logits)
                a = dist.sample()
                self.obs, r, done = _env_step(self.env, int(a))
                if done:
                    self.obs = _reset(self.env)
                obs.append(o[0].cpu()), acts.append(a.cpu()), logps.append(dist.log_prob(a).cpu())
                advs.append(torch.tensor([r]) - v[0].cpu())
        obs, acts, logps, advs = torch.stack(obs), torch.cat(acts), torch.cat(logps), torch.cat(advs)
        rets = advs.clone()
        samples = 0
        for _ in range(self.epochs):
            perm = torch.randperm(self.n_steps)
            for s in range(0, self.n_steps - self.batch + 1, self.batch):
                idx = perm[s:s + self.batch]
                o, a, lp, adv, ret = (t[idx].to(self.dev) for t in (obs, acts, logps, advs, rets))
                with self._autocast():
                    logits, v = net(o)
                dist = torch.distributions.Categorical(logits=logits.float())
                ratio = torch.exp(dist.log_prob(a) - lp)
                pg = -torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean()
                loss = pg + 0.5 * F.mse_loss(v.float().squeeze(1), ret)  # SB3 ent_coef 0
                self._update(loss, self.opt)
                samples += self.batch
        return samples

    # -- TD3: one episode (<= 1600 env steps), then one gradient step per env step
    def _setup_td3(self):
        import copy
        actor, critic = self.nets
        self.critic2 = W.build(self.w["graphs"][1], seed=1).to(self.dev).train()
        self.actor_t, self.c1_t, self.c2_t = (copy.deepcopy(m) for m in (actor, critic, self.critic2))
        self.opt_a = torch.optim.Adam(actor.parameters(), lr=1e-3)
        self.opt_c = torch.optim.Adam(list(critic.parameters()) + list(self.critic2.parameters()), lr=1e-3)
        self.env = make_env("BipedalWalker-v3", 24, 4, self.tiny)
        self.max_steps = 8 if self.tiny else 1600
        self.buf = []
        self.updates = 0
        self._step = self._step_td3

    def _step_td3(self):
        actor, c1 = self.nets
        obs, steps = _reset(self.env), 0
        for steps in range(1, self.max_steps + 1):
            with torch.no_grad():
                a = actor(torch.as_tensor(np.asarray(obs, np.float32), device=self.dev).unsqueeze(0))[0].cpu()
            a = (a + 0.1 * torch.randn(4)).clamp(-1, 1)
            nxt, r, done = _env_step(self.env, a.numpy())
            self.buf.append((np.asarray(obs, np.float32), a.numpy(), r, np.asarray(nxt, np.float32), float(done)))
            obs = nxt
            if done:
                break
        samples = 0
        for _ in range(steps):
            idx = np.random.randint(len(self.buf), size=self.batch)
            o, a, r, n, d = (torch.as_tensor(np.array(x), dtype=torch.float32, device=self.dev)
                             for x in zip(*(self.buf[i] for i in idx)))
            with torch.no_grad(), self._autocast():
                na = (self.actor_t(n) + (0.2 * torch.randn_like(a)).clamp(-0.5, 0.5)).clamp(-1, 1)
                tq = r.unsqueeze(1) + 0.99 * (1 - d.unsqueeze(1)) * torch.min(self.c1_t(n, na), self.c2_t(n, na))
            with self._autocast():
                closs = F.mse_loss(c1(o, a).float(), tq.float()) + F.mse_loss(self.critic2(o, a).float(), tq.float())
            self._update(closs, self.opt_c)
            self.updates += 1
            if self.updates % 2 == 0:
                with self._autocast():
                    aloss = -c1(o, actor(o)).float().mean()
                self._update(aloss, self.opt_a)
                with torch.no_grad():
                    for src, dst in ((actor, self.actor_t), (c1, self.c1_t), (self.critic2, self.c2_t)):
                        for p, tp in zip(src.parameters(), dst.parameters()):
                            tp.mul_(0.995).add_(0.005 * p)
            samples += self.batch
        return samples

