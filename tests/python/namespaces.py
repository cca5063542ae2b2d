"""Containers without a container engine: a target started in namespaces of
its own, as Docker and Kubernetes start a service, and readers placed as
a node, a sidecar or ``docker exec`` place them (test_containers.py).

Setups (:data:`SETUPS`):

* ``none``: no namespace (the control);
* ``pid``: a PID namespace, ``unshare --pid --fork --mount-proc`` (the
  target's threads have ids of their own; same files);
* ``mnt``: a mount namespace whose root is another filesystem,
  ``unshare --mount`` and ``pivot_root`` (same ids; the target's files are
  not the reader's: /app, /targets exist only in its root);
* ``pid+mnt``: both, as a container has them.

The target's root (``mnt`` setups) is a tmpfs holding the machine's /usr
and /dev, the test's work directory at /app (the target's cwd, where a
kernel core lands) and targets/ at /targets, each bound read-only but
/app; /proc is mounted in it (the target's PID namespace's with ``pid``).
The test root is a chroot, whose root is no mount point, which
``pivot_root`` refuses: :func:`init` first binds it onto itself and enters
that mount.

Readers (:meth:`Container.sidecar`, :meth:`Container.exec`): a sidecar
(``kubectl debug --target``, ``docker run --pid=container:ID``) joins the
target's PID namespace only (``nsenter --pid``) and mounts that
namespace's /proc in a mount namespace of its own, keeping its own root;
``docker exec`` joins both and the target's root (``nsenter --pid --mount
--root --wd``).

The launcher is this file run as a program (:func:`init`) as the first
process of the new namespaces: it builds the root, then execs the target
(the target is the namespace's PID 1, as ``docker run python app.py``
makes it) or, with ``--init``, starts it and waits for it (PID 2 under an
init, as ``docker run --init`` makes it: a signal from the node reaches
it, which a PID 1 without a handler for it ignores).  ``unshare
--kill-child`` ends the namespace when the test kills unshare.
"""

import ctypes
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = os.path.join(HERE, "targets")

SETUPS = ("none", "pid", "mnt", "pid+mnt")

#: Where the target's root puts the work directory and targets/.
APP = "/app"
TARGETS_INSIDE = "/targets"

# mount(2) flags
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}


def nspid(pid, tid=None):
    """The NSpid line of /proc/PID[/task/TID]/status: the ids of the task
    from our PID namespace down to its own, or None."""
    path = "/proc/%d/status" % pid if tid is None else "/proc/%d/task/%d/status" % (pid, tid)
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return [int(x) for x in line.split()[1:]]
    except OSError:
        return None
    return None


def host_tids(pid):
    """{the thread's id in its own PID namespace: its id here} of each
    thread of process pid (the node's /proc: the oracle of both ids)."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        ids = nspid(pid, int(tid))
        if ids:
            out[ids[-1]] = ids[0]
    return out


class Container(object):
    """How a target is started (``setup``: one of SETUPS) and how its
    readers are placed.  ``init``: the target runs under an init (PID 2).
    ``binds``: [(directory here, path inside)] more read-only binds into
    its root (the package for a reader run with docker exec)."""

    def __init__(self, setup, init=False, binds=()):
        if setup not in SETUPS:
            raise ValueError("setup must be one of %s" % (SETUPS,))
        self.setup = setup
        self.init = init
        self.binds = list(binds)

    def __repr__(self):
        return "Container(%s%s)" % (self.setup, ", init" if self.init else "")

    @property
    def pid_ns(self):
        return "pid" in self.setup

    @property
    def mount_ns(self):
        return "mnt" in self.setup

    def inside(self, path, workdir):
        """A path of this machine as the target sees it."""
        if not self.mount_ns:
            return path
        for outside, inner in ((workdir, APP), (TARGETS, TARGETS_INSIDE)):
            outside = os.path.realpath(outside)
            real = os.path.realpath(path) if os.path.exists(path) else path
            if real == outside or real.startswith(outside + os.sep):
                return inner + real[len(outside):]
        return path

    def wrap(self, argv, workdir):
        """The command line starting ``argv`` (the target's, paths of this
        machine) in the namespaces."""
        if self.setup == "none" and not self.init:
            return list(argv)
        unshare = [shutil.which("unshare") or "unshare", "--fork", "--kill-child",
                   "--propagation", "unchanged"]
        if self.pid_ns:
            unshare.append("--pid")
            if not self.mount_ns:
                unshare.append("--mount-proc")
        if self.mount_ns:
            unshare.append("--mount")
        launcher = [sys.executable, "-E", "-s", os.path.abspath(__file__), "init"]
        if self.mount_ns:
            launcher += ["--root", workdir, "--proc"]
            for outside, inner in self.binds:
                launcher += ["--bind", "%s:%s" % (outside, inner)]
            launcher += ["--cwd", APP]
        if self.init:
            launcher.append("--init")
        inner = [self.inside(a, workdir) for a in argv]
        if self.setup == "none":
            return launcher + ["--"] + inner
        return unshare + ["--"] + launcher + ["--"] + inner

    def find_target(self, launched, own_pid):
        """The PID here of the target whose PID in its own namespace is
        ``own_pid``: ``launched`` (the process the test started) itself
        without namespace or init, else one of its descendants."""
        from livetarget import children
        if self.setup == "none" and not self.init:
            return launched
        todo, seen = children(launched), set()
        while todo:
            p = todo.pop(0)
            if p in seen:
                continue
            seen.add(p)
            ids = nspid(p)
            if ids and ids[-1] == own_pid:
                return p
            todo += children(p)
        raise AssertionError("no process under %d has PID %d in its namespace"
                             % (launched, own_pid))

    # ---- readers ---------------------------------------------------------

    def sidecar(self, pid, argv):
        """``argv`` run as a sidecar of the target (``pid``: its PID here):
        in its PID namespace, with that namespace's /proc in a mount
        namespace of its own, its root this machine's."""
        return [shutil.which("nsenter") or "nsenter", "--target", str(pid), "--pid", "--",
                shutil.which("unshare") or "unshare", "--mount", "--propagation", "unchanged",
                "--", "sh", "-c", 'mount -t proc proc /proc && exec "$@"', "sidecar"] + list(argv)

    def exec(self, pid, argv):
        """``argv`` run as ``docker exec`` runs it: in the target's PID and
        mount namespaces, its root and working directory."""
        return [shutil.which("nsenter") or "nsenter", "--target", str(pid), "--pid", "--mount",
                "--root", "--wd", "--"] + list(argv)


# ---- the launcher, run in the new namespaces ---------------------------------

def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(rc, what):
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, os.strerror(e)))


def _mount(libc, source, target, fstype=None, flags=0, data=None):
    enc = lambda s: None if s is None else os.fsencode(s)  # noqa: E731
    _check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags),
                      enc(data)), "mount %s on %s" % (source, target))


def _bind(libc, source, target, readonly=True, recursive=False):
    _mount(libc, source, target, None, MS_BIND | (MS_REC if recursive else 0))
    if readonly:
        _mount(libc, None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY)


def _new_root(workdir, binds):
    """Make a root of its own and pivot_root into it (see the module
    docstring)."""
    libc = _libc()
    # the chroot's root a mount point: itself bound onto it, entered by a
    # walk up from the root (which crosses into the mount on top of it)
    _mount(libc, "/", "/", None, MS_BIND | MS_REC)
    os.chdir("/..")
    os.chroot(".")
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)  # nothing leaves this namespace
    new = "/mnt"
    _mount(libc, "tmpfs", new, "tmpfs", 0, "mode=755")
    for d in ("usr", "dev", "proc", "tmp", "app", "targets", "old"):
        os.mkdir(os.path.join(new, d))
    for link in ("lib", "lib64", "bin", "sbin"):
        if os.path.islink("/" + link):
            os.symlink(os.readlink("/" + link), os.path.join(new, link))
    _bind(libc, "/usr", new + "/usr", recursive=True)
    _bind(libc, "/dev", new + "/dev", readonly=False, recursive=True)
    _mount(libc, "tmpfs", new + "/tmp", "tmpfs", 0, "mode=1777")
    _bind(libc, workdir, new + APP, readonly=False)
    _bind(libc, TARGETS, new + TARGETS_INSIDE)
    for outside, inner in binds:
        os.makedirs(new + inner)
        _bind(libc, outside, new + inner, recursive=True)
    os.chdir(new)
    _check(libc.syscall(_PIVOT_ROOT[os.uname().machine], b".", b"old"), "pivot_root")
    os.chdir("/")
    _check(libc.umount2(b"/old", MNT_DETACH), "umount /old")
    os.rmdir("/old")


def init(args):
    """The launcher: ``init [--root WORKDIR [--proc] [--bind OUT:IN]...
    [--cwd DIR]] [--init] -- ARGV...``."""
    workdir = cwd = None
    proc = start_init = False
    binds = []
    while args and args[0] != "--":
        flag = args.pop(0)
        if flag == "--root":
            workdir = args.pop(0)
        elif flag == "--proc":
            proc = True
        elif flag == "--bind":
            outside, inner = args.pop(0).split(":", 1)
            binds.append((outside, inner))
        elif flag == "--cwd":
            cwd = args.pop(0)
        elif flag == "--init":
            start_init = True
        else:
            sys.exit("namespaces.py init: unknown option %s" % flag)
    argv = args[1:]
    if workdir is not None:
        _new_root(workdir, binds)
        if proc:
            _mount(_libc(), "proc", "/proc", "proc")
    if cwd is not None:
        os.chdir(cwd)
    if not start_init:
        os.execv(argv[0], argv)
    # an init: the target is its child, with cores allowed (a kernel core
    # is written in its working directory)
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    fds = [int(os.environ["PYFRAMES_READY_FD"])] if "PYFRAMES_READY_FD" in os.environ else []
    child = subprocess.Popen(argv, pass_fds=fds, close_fds=True)
    for fd in fds:
        os.close(fd)
    sys.exit(child.wait())


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "init":
        init(sys.argv[2:])
    else:
        sys.exit("usage: namespaces.py init [options] -- ARGV...")
