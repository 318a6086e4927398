"""Test AI programs for the program seats (``process.ProgramSeat`` on the reactor and
``pipes.PipeSeat`` in gamed-stratego's loop), and /proc helpers to check what is left of them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

PYTHON = os.path.realpath(sys.executable)  # the venv's interpreter would only start slower

# A test AI driven by its arguments. It speaks §5 in the order of §5.3 with the default setups and
# plays PLAN, one item per move (escapes like \r and \xff allowed), then SURRENDER. Items:
#   @exit            exit instead of replying          @sleep       never reply
#   @partial:S       "0 3 " at once, "DOWN\n" S s later @last:TEXT   TEXT without "\n", then exit
#   @flood-line:N    N bytes without a newline, then sleep
#   @flood-exit:N    N bytes without a newline, then exit
# Options: --die (exit before setup), --setup N (send only N rows, then sleep), --eager (send the
# plan's replies right after the setup), --think S (sleep before each reply), --think-until FILE
# (before each reply: create FILE.thinking, then wait until FILE exists and remove it; a test
# decides when it answers), --fork (a child that sleeps in the same process group), --linger
# (ignore SIGTERM and sleep after QUIT), --record FILE (append every line read, as repr), --group
# FILE (write the group id at start), --flood-after-setup N (N bytes of "garbage\n" right after
# the setup, then sleep), --escape FILE (a child that leaves the group with setsid(), writes its
# pid to FILE and sleeps), --escape-orphan FILE (the same from a grandchild whose parent exits at
# once: it is orphaned before the game starts).
PUPPET = r'''
import codecs, os, signal, sys, time

RED = ["FB8sB479B8", "BB31555583", "6724898974", "967B669999"]
BLUE = ["967B669999", "6724898974", "BB31555583", "FB8sB479B8"]
args = sys.argv[1:]
opts = {}
while args and args[0].startswith("--"):
    flag = args.pop(0)[2:]
    opts[flag] = args.pop(0) if flag in ("setup", "think", "think-until", "record", "group", "flood-after-setup", "escape", "escape-orphan") else True
plan = [codecs.decode(item, "unicode_escape") for item in args]
out = sys.stdout.buffer

def write(data):
    out.write(data.encode("latin-1") if isinstance(data, str) else data)
    out.flush()

def linger():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(30)
    sys.exit(0)

def read():
    line = sys.stdin.buffer.readline()
    if "record" in opts:
        with open(opts["record"], "a") as f:
            f.write(repr(line.decode("latin-1")) + "\n")
    if not line or line.startswith(b"QUIT"):
        if "linger" in opts:
            linger()
        sys.exit(0)
    return line[:-1].decode("latin-1")

if "group" in opts:
    with open(opts["group"], "w") as f:
        f.write("%d %d\n" % (os.getpid(), os.getpgid(0)))
if "fork" in opts and os.fork() == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(30)
    os._exit(0)
def escape(path):
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with open(path + ".tmp", "w") as f:
        f.write("%d\n" % os.getpid())
    os.rename(path + ".tmp", path)
    time.sleep(60)
    os._exit(0)

if "escape" in opts and os.fork() == 0:
    escape(opts["escape"])
if "escape-orphan" in opts:
    middle = os.fork()
    if middle == 0:
        if os.fork() == 0:
            escape(opts["escape-orphan"])
        os._exit(0)
    os.waitpid(middle, 0)
if "die" in opts:
    sys.exit(3)
colour = read().split()[0]
rows = RED if colour == "RED" else BLUE
for row in rows[: int(opts.get("setup", 4))]:
    write(row + "\n")
if "setup" in opts:
    time.sleep(30)
if "flood-after-setup" in opts:
    write(b"garbage\n" * (int(opts["flood-after-setup"]) // 8))
    time.sleep(30)
if "eager" in opts:
    write("".join(item + "\n" for item in plan))
    plan = []
if colour == "RED":
    read()  # START
while True:
    if colour == "BLUE":
        read()  # RED's confirmation
    for _ in range(10):
        read()
    if "think" in opts:
        time.sleep(float(opts["think"]))
    if "think-until" in opts:
        go = opts["think-until"]
        open(go + ".thinking", "w").close()
        while not os.path.exists(go):
            time.sleep(0.005)
        os.unlink(go)
    item = plan.pop(0) if plan else ("SURRENDER" if "eager" not in opts else None)
    if item is None:
        pass  # eager: the replies were sent already
    elif item == "@exit":
        sys.exit(0)
    elif item == "@sleep":
        time.sleep(30)
    elif item.startswith("@partial:"):
        write("0 3 ")
        time.sleep(float(item.split(":")[1]))
        write("DOWN\n")
    elif item.startswith("@last:"):
        write(item[len("@last:"):])
        sys.exit(0)
    elif item.startswith("@flood-line:"):
        write(b"x" * int(item.split(":")[1]))
        time.sleep(30)
    elif item.startswith("@flood-exit:"):
        write(b"x" * int(item.split(":")[1]))
        sys.exit(0)
    else:
        write(item + "\n")
    read()  # our confirmation
    if colour == "RED":
        read()  # BLUE's confirmation
'''


def write_script(path: Path, body: str) -> str:
    """An executable Python script at ``path`` (the parents are made); its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{PYTHON} -IS\n{body}")
    path.chmod(0o755)
    return str(path)


def group_members(pgid: int) -> list[tuple[int, str]]:
    """(pid, state) of every process, zombies included, whose process group is ``pgid``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        fields = data[data.rindex(b")") + 2 :].split()
        if int(fields[2]) == pgid:
            found.append((int(entry.name), fields[0].decode()))
    return found
