"""``ZeroRedundancyOptimizer``: an optimizer whose state is sharded over the ranks (ZeRO stage 1, PyTorch's name and
arguments).

Every rank holds all the parameters, but each parameter is owned by one rank, which alone keeps its optimizer state
(Adam's moments, ...) and updates it; after each step every owner broadcasts its updated parameters to the other
ranks. The parameters are split as PyTorch splits them: per parameter group, the largest first, each to the rank
that owns the fewest elements so far. With gradients averaged by DDP, the updates equal the unsharded optimizer's.
"""
from __future__ import annotations

import io

import ember
import ember.distributed as dist
from ember.optim import Optimizer

__all__ = ["ZeroRedundancyOptimizer"]


class ZeroRedundancyOptimizer(Optimizer):
    """Wrap ``optimizer_class`` (e.g. ``ember.optim.Adam``, built with ``**defaults``) so that each rank of
    ``process_group`` (None: the default group) keeps the state of its share of ``params`` only.

    ``param_groups`` are all the parameters' groups (a learning-rate scheduler may change their options, which reach
    the local optimizer at the next ``step``); ``optim`` is this rank's optimizer of its own parameters. For a
    checkpoint, call ``consolidate_state_dict(to=0)`` on every rank, then ``state_dict()`` on rank 0: the state
    dict of the unsharded optimizer, which ``load_state_dict`` takes back (each rank keeping its share).

    On each rank of a job (``ember-run -n 2 script.py``)::

        import ember, ember.distributed as dist
        from ember.parallel import ZeroRedundancyOptimizer
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=ember.optim.Adam, lr=1e-3)
        loss.backward(); opt.step()
        opt.consolidate_state_dict(to=0)
        if dist.get_rank() == 0: ember.save(opt.state_dict(), "opt.pt")
    """

    def __init__(self, params, optimizer_class, process_group=None, parameters_as_bucket_view: bool = False,
                 overlap_with_ddp: bool = False, **defaults):
        if not (isinstance(optimizer_class, type) and issubclass(optimizer_class, Optimizer)):
            raise TypeError(f"ZeroRedundancyOptimizer: optimizer_class must be an ember.optim.Optimizer subclass "
                            f"(e.g. ember.optim.Adam), but got {optimizer_class!r}")
        if parameters_as_bucket_view or overlap_with_ddp:
            raise ValueError("ZeroRedundancyOptimizer: parameters_as_bucket_view and overlap_with_ddp are not "
                             "supported; leave them False")
        super().__init__(params, defaults)
        self.process_group = process_group
        self.world_size = dist.get_world_size(process_group)
        self.rank = dist.get_rank(process_group)
        self._global_ranks = dist.get_process_group_ranks(process_group)
        self._optimizer_class = optimizer_class
        self._owner = self._partition()  # id(param) -> owning group rank
        self._all_params = [p for g in self.param_groups for p in g["params"]]
        self.optim = optimizer_class(self._local_groups(self.rank), **defaults)
        for g in self.param_groups:  # the options the caller left to optimizer_class's defaults
            for key, value in self.optim.defaults.items():
                g.setdefault(key, value)
        self._consolidated = None

    def _partition(self) -> dict:
        sizes = [0] * self.world_size
        owner = {}
        for group in self.param_groups:
            for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
                rank = sizes.index(min(sizes))
                owner[id(p)] = rank
                sizes[rank] += p.numel()
        return owner

    def _local_groups(self, rank: int) -> list[dict]:
        """``rank``'s share of each parameter group, with the group's options."""
        return [{**{k: v for k, v in g.items() if k not in ("params", "param_names")},
                 "params": [p for p in g["params"] if self._owner[id(p)] == rank]} for g in self.param_groups]

    def step(self, closure=None):
        """Update this rank's parameters with the local optimizer, then give every rank every updated parameter
        (each broadcast from its owner). Returns the closure's loss, if given."""
        for group, local in zip(self.param_groups, self.optim.param_groups):
            local.update({k: v for k, v in group.items() if k not in ("params", "param_names")})
        loss = self.optim.step(closure) if closure is not None else self.optim.step()
        with ember.no_grad():
            works = [dist.broadcast(p, src=self._global_ranks[self._owner[id(p)]], group=self.process_group,
                                    async_op=True) for p in self._all_params]
            for work in works:
                if work is not None:
                    work.wait()
        return loss

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Collect every rank's share of the optimizer state on global rank ``to`` (call it on every rank), for
        ``state_dict()`` there."""
        if to not in self._global_ranks:
            raise ValueError(f"consolidate_state_dict: to={to!r} is not a rank of the optimizer's process group "
                             f"(its global ranks: {self._global_ranks})")
        me = self._global_ranks[self.rank]
        shards = []
        for k, src in enumerate(self._global_ranks):
            obj = [_to_bytes(self.optim.state_dict()) if k == self.rank else None]
            dist.broadcast_object_list(obj, src=src, group=self.process_group)
            if me == to:
                shards.append(ember.load(io.BytesIO(obj[0])))  # a copy, also of this rank's own share
        self._consolidated = shards if me == to else None

    def state_dict(self) -> dict:
        """The unsharded optimizer's state dict, on the rank that ``consolidate_state_dict(to=...)`` named."""
        if self._consolidated is None:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please call "
                               "`consolidate_state_dict(to=...)` on all ranks beforehand if you meant to save the "
                               "global state.")
        index = {id(p): i for i, p in enumerate(self._all_params)}
        state = {}
        for k, shard in enumerate(self._consolidated):
            local_params = [p for g in self._local_groups(k) for p in g["params"]]
            for local_index, value in shard["state"].items():
                state[index[id(local_params[local_index])]] = value
        groups = []
        for group in self.param_groups:
            packed = {key: v for key, v in group.items() if key != "params"}
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        return {"state": dict(sorted(state.items())), "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Load an unsharded optimizer's state dict (as ``state_dict()`` gives): the groups' options on every rank,
        each rank keeping the state of its own parameters."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups) or any(
                len(s["params"]) != len(g["params"]) for s, g in zip(groups, self.param_groups)):
            raise ValueError("loaded state dict has parameter groups that do not match the optimizer's (their "
                             "number, or the number of parameters in one)")
        for group, saved in zip(self.param_groups, groups):
            group.update({k: v for k, v in saved.items() if k not in ("params", "param_names")})
        saved_index = {id(p): i for g, s in zip(self.param_groups, groups) for p, i in zip(g["params"], s["params"])}
        local_groups = self._local_groups(self.rank)
        local_params = [p for g in local_groups for p in g["params"]]
        local_state = {j: state_dict["state"][saved_index[id(p)]] for j, p in enumerate(local_params)
                       if saved_index[id(p)] in state_dict["state"]}
        packed, start = [], 0
        for g in local_groups:
            n = len(g["params"])
            packed.append({**{k: v for k, v in g.items() if k != "params"}, "params": list(range(start, start + n))})
            start += n
        self.optim.load_state_dict({"state": local_state, "param_groups": packed})


def _to_bytes(state_dict: dict) -> bytes:
    """An optimizer state dict as the bytes of an ``ember.save`` checkpoint (tensors keep dtype and bits)."""
    buffer = io.BytesIO()
    ember.save(state_dict, buffer)
    return buffer.getvalue()
