#!/usr/bin/env python3
"""tests/cli/attach_tty.py [--exit] KUBECTL KUBECONFIG NS POD: `kubectl attach -it POD` to a
container with tty: true and stdin: true (a shell), driven through a real pty (40 rows, 100
columns) as a person would: checks the shell answers on a terminal (a /dev/pts of its own) of
the client's size, then of the new size after a resize (30 x 90). Without --exit the client is
killed at the end (the container must live on); with --exit the shell is told to exit and the
attach must end by itself. Prints what the terminal showed; exits 1 on a failed check."""
import fcntl
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time

do_exit = sys.argv[1] == "--exit"
if do_exit:
    del sys.argv[1]
kubectl, kcfg, ns, pod = sys.argv[1:5]
pid, fd = pty.fork()
if pid == 0:
    os.execv(kubectl, [kubectl, "--kubeconfig", kcfg, "attach", "-it", "-n", ns, pod])
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


read_for(3, b"try pressing enter")
time.sleep(0.5)
os.write(fd, b"\r")
read_for(3, b"# ")
os.write(fd, b"echo $((6*7)); tty; stty size\r")
read_for(5, b"40 100")
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 90, 0, 0))
time.sleep(0.5)
os.write(fd, b"stty size; echo resized-$((1+1))\r")
read_for(5, b"resized-2\r\n")
code = None
if do_exit:
    os.write(fd, b"exit 0\r")
    end = time.time() + 10
    while time.time() < end and code is None:
        read_for(0.2)
        w, st = os.waitpid(pid, os.WNOHANG)
        if w == pid:
            code = os.waitstatus_to_exitcode(st)
else:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
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
if "30 90" not in text:
    bad.append("the new size after a resize (30 90)")
if do_exit and code is None:
    bad.append("the end of the attach when the shell exited")
if bad:
    sys.exit("attach -it: missing " + ", ".join(bad))
