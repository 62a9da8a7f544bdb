#!/usr/bin/env python3
"""tests/cli/exec_tty.py KUBECTL KUBECONFIG NS POD: `kubectl exec -it POD -- sh` driven through a
real pty (40 rows, 100 columns) as a person would: checks the shell sees a terminal of that size
(the resize channel), that input is echoed and run, and that the shell's exit code comes back as
kubectl's. Prints what the terminal showed; exits 1 on a failed check."""
import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time

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
        if until and until in out:
            return
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                out += os.read(fd, 4096)
            except OSError:
                return


read_for(10, b"$ ")
os.write(fd, b"echo $((6*7)); tty; stty size; exit 5\r")
read_for(10, b"exit code 5")
_, st = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(st)
text = out.decode(errors="replace")
print(text)
bad = []
if "\r\n42\r\n" not in text:
    bad.append("the command's output (42)")
if "/dev/pts/" not in text:
    bad.append("a terminal (tty)")
if "40 100" not in text:
    bad.append("the terminal's size (40 100)")
if code != 5:
    bad.append("exit code %d, want 5" % code)
if bad:
    sys.exit("exec -it: missing " + ", ".join(bad))
