"""A small single-line editor for ophidis-cli's interactive mode.

GNU readline (Python's ``readline`` module) cannot draw redis-cli's inline
hints (the grey argument list shown after the cursor), so the interactive
mode uses this linenoise-like editor when stdin and stdout are terminals:
history (up/down, saved one entry per line, the format readline and
linenoise both read), Tab completion (cycling through candidates), hints,
and the usual Emacs keys (Ctrl-A/E/B/F/K/U/W/L/D/C, Home/End, Delete).
When the input is not a terminal, lines are read plainly without echoing a
prompt (as linenoise does).
"""

from __future__ import annotations

import os
import sys
import termios
import tty


class LineEditor:
    def __init__(self, completion=None, hints=None, history_max=100):
        self.completion = completion      # fn(buf) -> list of strings
        self.hints = hints                # fn(buf) -> str or None
        self.history = []
        self.history_max = history_max
        self.enable_hints = True

    # -- history --------------------------------------------------------
    def history_add(self, line):
        if not line:
            return
        if self.history and self.history[-1] == line:
            return
        self.history.append(line)
        if len(self.history) > self.history_max:
            del self.history[0]

    def history_load(self, path):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    line = line.rstrip("\n")
                    if line:
                        self.history_add(line)
        except OSError:
            pass

    def history_save(self, path):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                for line in self.history:
                    f.write(line + "\n")
        except OSError:
            pass

    # -- reading --------------------------------------------------------
    def readline(self, prompt):
        """Return the line, or None on EOF (Ctrl-D on an empty line)."""
        if not (os.isatty(0) and os.isatty(1)):
            line = sys.stdin.buffer.readline()
            if not line:
                return None
            return line.decode("utf-8", "surrogateescape").rstrip("\r\n")
        fd = 0
        old = termios.tcgetattr(fd)
        try:
            tty.setraw(fd)
            return self._edit(prompt)
        finally:
            termios.tcsetattr(fd, termios.TCSAFLUSH, old)

    def _write(self, s):
        os.write(1, s.encode("utf-8", "surrogateescape"))

    def _refresh(self, prompt, buf, pos):
        out = "\r" + prompt + buf
        if self.enable_hints and self.hints is not None:
            h = self.hints(buf)
            if h:
                out += "\x1b[0;90;49m" + h + "\x1b[0m"
        out += "\x1b[0K\r"
        col = len(prompt) + pos
        if col:
            out += "\x1b[%dC" % col
        self._write(out)

    def _getch(self):
        b = os.read(0, 1)
        if not b:
            return ""
        c = b[0]
        if c < 0x80:
            return chr(c)
        # UTF-8 sequence
        n = 2 if c >> 5 == 6 else 3 if c >> 4 == 14 else 4
        b += os.read(0, n - 1)
        return b.decode("utf-8", "replace")

    def _edit(self, prompt):
        buf = ""
        pos = 0
        hist = self.history + [""]
        hidx = len(hist) - 1
        self._write(prompt)
        while True:
            c = self._getch()
            if c == "":
                return None
            if c == "\t" and self.completion is not None:
                cands = self.completion(buf)
                if not cands:
                    self._write("\x07")
                    continue
                i = 0
                while True:
                    shown = cands[i] if i < len(cands) else buf
                    self._refresh(prompt, shown, len(shown))
                    c = self._getch()
                    if c == "\t":
                        i = (i + 1) % (len(cands) + 1)
                        if i == len(cands):
                            self._write("\x07")
                        continue
                    if c == "\x1b":
                        self._refresh(prompt, buf, pos)
                        c = None
                    else:
                        if i < len(cands):
                            buf = cands[i]
                            pos = len(buf)
                    break
                if c is None:
                    continue
            if c in ("\r", "\n"):
                # Redraw without the hint, then move to a new line.
                saved, self.enable_hints = self.enable_hints, False
                self._refresh(prompt, buf, len(buf))
                self.enable_hints = saved
                self._write("\r\n")
                return buf
            if c == "\x03":   # Ctrl-C
                self._write("^C\r\n")
                raise KeyboardInterrupt
            if c in ("\x7f", "\x08"):
                if pos > 0:
                    buf = buf[:pos - 1] + buf[pos:]
                    pos -= 1
            elif c == "\x04":  # Ctrl-D
                if not buf:
                    self._write("\r\n")
                    return None
                if pos < len(buf):
                    buf = buf[:pos] + buf[pos + 1:]
            elif c == "\x01":
                pos = 0
            elif c == "\x05":
                pos = len(buf)
            elif c == "\x02":
                pos = max(0, pos - 1)
            elif c == "\x06":
                pos = min(len(buf), pos + 1)
            elif c == "\x0b":
                buf = buf[:pos]
            elif c == "\x15":
                buf = buf[pos:]
                pos = 0
            elif c == "\x17":
                p = pos
                while p > 0 and buf[p - 1] == " ":
                    p -= 1
                while p > 0 and buf[p - 1] != " ":
                    p -= 1
                buf = buf[:p] + buf[pos:]
                pos = p
            elif c == "\x0c":
                self._write("\x1b[H\x1b[2J")
            elif c in ("\x10", "\x0e"):
                c = "up" if c == "\x10" else "down"
            elif c == "\x1b":
                s1 = self._getch()
                s2 = self._getch()
                if s1 in ("[", "O"):
                    if s2.isdigit():
                        s3 = self._getch()
                        if s2 == "3" and s3 == "~" and pos < len(buf):
                            buf = buf[:pos] + buf[pos + 1:]
                        elif s2 in "17" and s3 == "~":
                            pos = 0
                        elif s2 in "48" and s3 == "~":
                            pos = len(buf)
                    elif s2 == "A":
                        c = "up"
                    elif s2 == "B":
                        c = "down"
                    elif s2 == "C":
                        pos = min(len(buf), pos + 1)
                    elif s2 == "D":
                        pos = max(0, pos - 1)
                    elif s2 == "H":
                        pos = 0
                    elif s2 == "F":
                        pos = len(buf)
            elif c >= " ":
                buf = buf[:pos] + c + buf[pos:]
                pos += 1
            if c in ("up", "down"):
                hist[hidx] = buf
                hidx += -1 if c == "up" else 1
                hidx = max(0, min(len(hist) - 1, hidx))
                buf = hist[hidx]
                pos = len(buf)
            self._refresh(prompt, buf, pos)
