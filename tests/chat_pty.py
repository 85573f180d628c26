#!/usr/bin/env python3
"""chat_pty.py - drive tern-chat through a pseudo-terminal, as a person
would: type (with line editing), run slash commands, interrupt an answer,
leave with Ctrl-D; assert on the screen and on the conversation /save
writes. Used by tests/cli_chat.sh.

usage: chat_pty.py BIN MODEL TMPDIR
Prints "ok: WHAT" or "FAIL: WHAT" per check; exit status 1 if any failed."""
import json
import os
import pty
import re
import select
import sys
import termios
import time

BIN, MODEL, TMP = sys.argv[1:4]
fails = 0


def check(what, cond, detail=""):
    global fails
    if cond:
        print(f"ok: {what}")
    else:
        fails += 1
        print(f"FAIL: {what} {detail}"[:2000])


class Chat:
    """tern-chat on a pty; the parent keeps the slave open to read its modes."""

    def __init__(self, *args, env=None):
        self.master, self.slave = pty.openpty()
        self.modes = termios.tcgetattr(self.slave)
        e = dict(os.environ, TERM="xterm", NO_COLOR="1", XDG_STATE_HOME=os.path.join(TMP, "state"))
        e.pop("TERN_MODEL", None)
        e.update(env or {})
        self.pid = os.fork()
        if self.pid == 0:
            os.setsid()
            os.close(self.master)
            import fcntl
            fcntl.ioctl(self.slave, termios.TIOCSCTTY, 0)
            for fd in (0, 1, 2):
                os.dup2(self.slave, fd)
            extra = os.environ.get("CHAT_EXTRA", "").split()
            os.execve(BIN, [BIN, "-m", MODEL, "-t", "2", *extra, *args], e)
        self.screen = b""
        self.status = None

    def read(self, until, timeout=120):
        """Read until the regex `until` matches the text since the last call."""
        start = len(self.screen)
        end = time.time() + timeout
        while time.time() < end:
            if re.search(until, self.screen[start:].decode("utf-8", "replace")):
                break
            r, _, _ = select.select([self.master], [], [], 0.1)
            if not r and self.status is None:
                pid, st = os.waitpid(self.pid, os.WNOHANG)
                if pid:  # it left: nothing more will come
                    self.status = os.waitstatus_to_exitcode(st)
            if not r and self.status is not None:
                break
            if r:
                try:
                    d = os.read(self.master, 65536)
                except OSError:
                    break
                if not d:
                    break
                self.screen += d
        return self.screen[start:].decode("utf-8", "replace")

    def type(self, s, slow=False):
        for ch in ([s] if not slow else list(s)):
            os.write(self.master, ch.encode())
            if slow:
                time.sleep(0.02)

    def line(self, s):
        """Type s and Enter; the text up to the next prompt."""
        self.type(s + "\r")
        return self.read(r"\n> $")

    def wait(self, timeout=30):
        if self.status is not None:
            return self.status
        end = time.time() + timeout
        while time.time() < end:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(st)
                return self.status
            try:
                r, _, _ = select.select([self.master], [], [], 0.1)
                if r:
                    self.screen += os.read(self.master, 65536)
            except OSError:
                time.sleep(0.1)
        os.kill(self.pid, 9)
        os.waitpid(self.pid, 0)
        return None

    def saved(self, name):
        path = os.path.join(TMP, name)
        self.line(f"/save {path}")
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        except OSError:
            return None


# ---- one conversation: editing, commands, KV reuse, /regen, /save, /load ----
c = Chat("--temp", "0", "-n", "24")
banner = c.read(r"\n> $")
check("banner names the model, the context and /help", MODEL in banner and "context 4096" in banner and "/help" in banner, repr(banner))
if c.status is not None:
    sys.exit(1)

# line editing: a typo fixed with backspace, a word added after Ctrl-A and
# one inserted after moving left with the arrow key
c.type("capital of Frx", slow=True)
c.type("\x7f" + "ance?", slow=True)
c.type("\x01" + "What is the ", slow=True)
c.type("\x05" + "\x1b[D" * 7 + "big ", slow=True)  # End, 7 x Left: before "France?"
out = c.line("")
first = c.saved("t1.json")
check("typed text with backspace, Ctrl-A, End and Left arrows",
      [m["content"] for m in first if m["role"] == "user"] == ["What is the capital of big France?"], repr(first))
check("the answer is streamed to the terminal", len(first) == 2 and first[1]["role"] == "assistant"
      and first[1]["content"].strip()[:10] in out, repr(out))

# KV reuse: the second turn feeds its own tokens, not the conversation's
c.line("And of Italy?")
stats = c.line("/stats")
m = re.search(r"prompt (\d+) tokens processed \((\d+) reused of (\d+)\)", stats)
check("/stats shows the prompt tokens of the last answer", m is not None, repr(stats))
if m:
    fed, reused, total = map(int, m.groups())
    check(f"turn 2 feeds {fed} of {total} tokens ({reused} reused)", fed + reused == total and fed * 2 < total and reused > 0)
check("/stats shows the context used and the speeds", re.search(r"context: \d+ of 4096 tokens used", stats)
      and re.search(r"tokens generated in [\d.]+ ms", stats), repr(stats))

# /regen: greedy, so the same answer again (from the reused cache)
before = c.saved("t2.json")
regen = c.line("/regen")
after = c.saved("t3.json")
check("/regen answers the last message again: the same greedy answer", before == after and len(after) == 4, repr((before, after)))

# /undo drops the last exchange
c.line("/undo")
check("/undo drops the last exchange", c.saved("t4.json") == before[:2])

# /system, /set, /help, /model
c.line("/system Answer in French.")
conv = c.saved("t5.json")
check("/system puts a system message first", conv[0] == {"role": "system", "content": "Answer in French."} and conv[1:] == before[:2], repr(conv))
out = c.line("/set temp 0.5")
check("/set temp answers with the new value", "temp = 0.5" in out, repr(out))
out = c.line("/set bogus 1")
check("/set with an unknown name: an error, the chat goes on", "not a setting" in out and out.endswith("> "), repr(out))
out = c.line("/set temp 0")
out = c.line("/help")
check("/help lists the commands", all(k in out for k in ("/regen", "/undo", "/save", "/load", "/set", "/stats", "/clear")), repr(out))
out = c.line("/model")
check("/model names the model and the template", MODEL in out and "chat template:" in out, repr(out))
out = c.line("/nosuch")
check("an unknown command is an error, not a message", "unknown command '/nosuch'" in out and c.saved("t6.json") == conv)

# /save then /load gives the same conversation; /clear keeps the system prompt
c.line("/clear")
cleared = c.saved("t7.json")
check("/clear: a new conversation, the system prompt stays", cleared == conv[:1], repr(cleared))
c.line(f"/load {os.path.join(TMP, 't5.json')}")
check("/save then /load: the same conversation", c.saved("t8.json") == conv)

# multi-line input: a trailing backslash, a """ block
c.line("/undo")
c.type("one\\\r")
c.read(r"\n\. $")
c.type("two\r")
c.read(r"\n> $")
conv = c.saved("t8b.json")
check("a trailing backslash continues the message on the next line", conv[-2] == {"role": "user", "content": "one\ntwo"}, repr(conv[-2:]))
c.line("/undo")
c.type('"""\r')
c.read(r"\n\. $")
for ln in ("alpha", "", "beta"):
    c.type(ln + "\r")
    c.read(r"\n\. $")
c.type('"""\r')
c.read(r"\n> $")
conv = c.saved("t9.json")
check('a """ block is one message, blank lines kept', conv[-2] == {"role": "user", "content": "alpha\n\nbeta"}, repr(conv[-2:]))

# Ctrl-C on a line being typed drops the line; Ctrl-D leaves
c.type("never sent")
time.sleep(0.3)
c.type("\x03")
c.read(r"\n> $")
check("Ctrl-C on a typed line drops it", c.saved("t10.json") == conv)
time.sleep(0.2)
c.type("\x04")
st = c.wait()
check(f"Ctrl-D leaves with status 0 (got {st})", st == 0)
check("the terminal is restored", termios.tcgetattr(c.slave) == c.modes)

hist = os.path.join(TMP, "state", "tern", "chat_history")
# libedit writes it vis(3)-encoded: a space is \040
check("the history file holds the lines typed", os.path.exists(hist) and "And of Italy?" in open(hist, errors="replace").read().replace("\\040", " "))

# ---- a second session: the history is there; Ctrl-C stops an answer ----
c = Chat("--temp", "0", "--ignore-eos", "-n", "100000")
c.read(r"\n> $")
c.type("\x1b[A" * 1)
time.sleep(0.3)
shown = c.read(r"t10\.json", timeout=5)
check("Up arrow recalls the last line of the previous session", "t10.json" in shown, repr(shown))
c.type("\x15")  # Ctrl-U: clear the recalled line
c.type("Write a long story about a dragon.\r")
c.read(r"\n\S", timeout=60)  # the answer flows
time.sleep(1.0)
c.type("\x03")
out = c.read(r"\n> $", timeout=60)
check("Ctrl-C stops the answer and the prompt comes back", "(stopped)" in out, repr(out[-200:]))
conv = c.saved("s1.json")
check("the text produced before Ctrl-C stays in the conversation", len(conv) == 2 and len(conv[1]["content"]) > 10, repr(conv))
time.sleep(0.2)
c.type("\x03")  # on an empty line: leave
st = c.wait()
check(f"Ctrl-C on an empty line leaves with status 0 (got {st})", st == 0)
check("the terminal is restored after Ctrl-C", termios.tcgetattr(c.slave) == c.modes)

# ---- colour: on a terminal by default, never with NO_COLOR or --color=never ----
for args, env, want in (((), {"NO_COLOR": ""}, True), ((), {}, False), (("--color=never",), {"NO_COLOR": ""}, False)):
    c = Chat(*args, env=env)
    shown = c.read(r"> (\x1b\[0m)?$", timeout=60)
    time.sleep(0.3)  # a key typed before libedit has the terminal may be read in cooked mode
    c.type("\x04")
    st = c.wait()
    what = f"colour {'on' if want else 'off'} with {' '.join(args) or 'no option'}, NO_COLOR={env.get('NO_COLOR', '1')!r}"
    sgr = re.search(r"\x1b\[[0-9;]*m", shown) is not None
    check(what, sgr == want and st == 0, repr((shown, st)))

sys.exit(1 if fails else 0)
