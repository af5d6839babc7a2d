"""Takes every inotify watch its user may have (fs.inotify.max_user_watches), for the tests of a
daemon that meets the limit: watches existing files first, then files it creates, until the kernel
answers ENOSPC. Prints "full <watches>" and holds them until its standard input closes, then lets
them go and removes what it created."""
import ctypes
import errno
import os
import shutil
import sys
import tempfile

libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_CLOEXEC)
if fd < 0:
    sys.exit("inotify_init1: " + os.strerror(ctypes.get_errno()))
IN_ATTRIB = 0x4
taken = 0


def watch(path):
    """True when watched, False when refused for another reason, None when the quota is full."""
    global taken
    if libc.inotify_add_watch(fd, path.encode(), IN_ATTRIB) >= 0:
        taken += 1
        return True
    return None if ctypes.get_errno() == errno.ENOSPC else False


def existing():
    for top in ("/usr", "/etc", "/var", "/opt"):
        for root, dirs, files in os.walk(top):
            for name in dirs + files:
                yield os.path.join(root, name)


full = False
for p in existing():
    if watch(p) is None:
        full = True
        break
made = tempfile.mkdtemp(prefix="barwatch-hog-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
i = 0
while not full:
    p = os.path.join(made, str(i))
    i += 1
    open(p, "w").close()
    full = watch(p) is None
print("full", taken, flush=True)
sys.stdin.read()
os.close(fd)
shutil.rmtree(made, ignore_errors=True)
