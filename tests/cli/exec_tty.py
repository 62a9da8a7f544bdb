#!/usr/bin/env python3
"""tests/cli/exec_tty.py KUBECTL KUBECONFIG NS POD: `kubectl exec -it POD -- sh` driven through a
real pty (40 rows, 100 columns) as a person would: checks the shell sees a terminal of that size
(the resize channel), that input is echoed and run, and that the shell's exit code comes back as
kubectl's. Prints what the terminal showed; exits 1 on a failed check.
With --resize first: the terminal is resized to 30 x 90 in the middle of the session, and the
shell must see the new size (kubectl's SIGWINCH, the resize channel, the server's TIOCSWINSZ)."""
import fcntl
import os
import pty
import re
import select
import struct
import sys
import termios
import time

resize = sys.argv[1] == "--resize"
if resize:
    del sys.argv[1]
kubectl, kcfg, ns, pod = sys.argv[1:5]
pid, fd = pty.fork()
if pid == 0:
    os.execv(kubectl, [kubectl, "--kubeconfig", kcfg, "exec", "-it", "-n", ns, pod, "--", "sh"])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
out = b""


def read_for(secs, until=None):
    global out
    end = time.time() + secs
    while time.time() < end:
        if until and any(u in out for u in (until if isinstance(until, tuple) else (until,))):
            return
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                out += os.read(fd, 4096)
            except OSError:
                return


read_for(10, (b"$ ", b"# "))  # the prompt: a user's, or root's in a container
if resize:
    os.write(fd, b"stty size\r")
    read_for(5, b"40 100")
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 90, 0, 0))
    time.sleep(0.5)
    os.write(fd, b"stty size; echo resized-$((1+1))\r")
    read_for(5, b"resized-2")
os.write(fd, b"echo $((6*7)); tty; stty size; exit 5\r")
read_for(10, b"exit code 5")
_, st = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(st)
text = out.decode(errors="replace")
print(text)
print(repr(out))
bad = []
if not re.search(r"\r\n+42\r\n", text):
    bad.append("the command's output (42)")
if "/dev/pts/" not in text:
    bad.append("a terminal (tty)")
if "40 100" not in text:
    bad.append("the terminal's size (40 100)")
if resize and "30 90" not in text:
    bad.append("the new size after a resize (30 90)")
if code != 5:
    bad.append("exit code %d, want 5" % code)
if bad:
    sys.exit("exec -it: missing " + ", ".join(bad))
