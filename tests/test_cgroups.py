"""cgroup isolation: v2 against a simulated cgroup2 tree (this machine mounts
v1; current Debian and Ubuntu hosts mount v2 only), v1 against the real one."""

import os
from pathlib import Path

import pytest
from serverbench.host import cgroups as isolation
from serverbench.host.cgroups import HARNESS_LEAF, Isolation


def cgroup2_tree(tmp_path: Path, controllers: str = "cpuset cpu io memory pids", own: str = "/job") -> Path:
    """A directory shaped like a cgroup2 mount, this process in ``own``."""
    root = tmp_path / "cgroup"
    group = root / own.strip("/")
    group.mkdir(parents=True)
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (group / "cgroup.controllers").write_text(controllers + "\n")
    (group / "cgroup.subtree_control").write_text("\n")
    (group / "cgroup.procs").write_text(f"{os.getpid()}\n")
    (tmp_path / "self-cgroup").write_text(f"0::{own}\n")
    return root


def v2(tmp_path, root, **limits):
    return Isolation(cpus=[0, 1], root=root, self_cgroup=tmp_path / "self-cgroup", **limits).setup()


def test_v2_enables_controllers_after_moving_the_harness_into_a_leaf(tmp_path):
    root = cgroup2_tree(tmp_path)
    made = v2(tmp_path, root, memory_limit=256 * 1024**2)
    assert made.method == "cgroup-v2" and made.problem is None, made.problem
    job = root / "job"
    assert (job / HARNESS_LEAF / "cgroup.procs").read_text() == str(os.getpid())
    assert (job / "cgroup.subtree_control").read_text().split() == ["+cpuset", "+memory", "+cpu"]
    [group] = made.groups
    assert group.parent == job
    assert isolation.cpu_list((group / "cpuset.cpus").read_text()) == [0, 1]
    assert (group / "memory.max").read_text() == str(256 * 1024**2)


def test_v2_from_inside_the_harness_leaf_stays_beside_it(tmp_path):
    root = cgroup2_tree(tmp_path)
    v2(tmp_path, root)
    (tmp_path / "self-cgroup").write_text(f"0::/job/{HARNESS_LEAF}\n")
    (root / "job" / "cgroup.subtree_control").write_text("cpuset memory cpu\n")
    second = v2(tmp_path, root)
    assert second.method == "cgroup-v2"
    assert second.groups[0].parent == root / "job"


def test_v2_without_delegated_controllers_says_which(tmp_path):
    root = cgroup2_tree(tmp_path, controllers="cpu io pids")
    made = v2(tmp_path, root, memory_limit=256 * 1024**2)
    assert made.method == "affinity" and not made.enforced
    assert "cpuset, memory not delegated" in made.problem
    assert made.groups == []


def test_v2_limit_the_kernel_refuses_is_a_problem(tmp_path):
    root = cgroup2_tree(tmp_path)
    made_before = v2(tmp_path, root)
    made_before.cleanup()
    # A directory where memory.max should be: the write fails as the kernel's refusal would.
    original = Path.mkdir

    def mkdir_with_trap(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if self.parent == root / "job" and self.name.startswith("serverbench-"):
            original(self / "memory.max")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Path, "mkdir", mkdir_with_trap)
        made = v2(tmp_path, root, memory_limit=256 * 1024**2)
    assert made.method == "affinity"
    assert "memory.max" in made.problem


def test_cpu_lists_and_page_rounding():
    assert isolation.cpu_list("0-2,5") == [0, 1, 2, 5]
    assert isolation.same_cpus("0,1,2", "0-2")
    assert isolation.same_bytes(str(10**9), str(10**9 - 100))
    assert not isolation.same_bytes(str(10**9), str(10**8))


def test_v1_limits_are_written_and_read_back_here():
    if isolation.cgroup_version() != 1:
        pytest.skip("this host does not mount cgroup v1 (the simulated v2 tests cover v2)")
    made = Isolation(cpus=[0], memory_limit=128 * 1024**2).setup()
    try:
        assert made.method == "cgroup-v1", made.problem
        memory = next(g for g in made.groups if g.parts[-3] == "memory" or "memory" in g.parts)
        assert int((memory / "memory.limit_in_bytes").read_text()) == 128 * 1024**2
    finally:
        made.cleanup()
