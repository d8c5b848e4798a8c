"""Regular expressions as Kafka's coordinators read them: RE2/J's syntax (``com.google.re2j.Pattern``,
which the KIP-848 group coordinator uses for ``SubscribedTopicRegex`` and the transaction coordinator
for ListTransactions' ``TransactionalIdPattern``), matched with Python's ``re``.

``compile_re2`` parses a pattern as RE2/J 1.8's ``Parser`` does in its default (Perl) mode, one
character at a time and in the same order, so a pattern RE2/J refuses is refused here with the
description RE2/J gives (``PatternSyntaxException.getDescription``): lookarounds, backreferences,
possessive and doubled repetition operators, ``\\Z``, ``[\\b]``, counts above 1000 and so on are
errors, as in Kafka. A pattern it accepts is rewritten as an equivalent Python expression: RE2's
ASCII ``\\d \\s \\w \\b``, POSIX classes, ``\\Q...\\E``, ``\\z``, ``(?U)``, flag groups anywhere, ``{``
as a literal where it starts no repeat, and ``^``/``$`` as text anchors unless ``(?m)``. Unicode
classes are checked against RE2/J's table of names; the general categories match through
``unicodedata``, while script classes (``\\p{Greek}``) match nothing, as Python has no script data.
Kafka matches a whole name (``Matcher.matches``): use ``fullmatch``."""

from __future__ import annotations

import functools
import re
import sys
import unicodedata

__all__ = ["Re2SyntaxError", "compile_re2"]

_MAX_RUNE = 0x10FFFF
_MAX_REPEAT = 1000

ERR_INTERNAL_ERROR = "regexp/syntax: internal error"
ERR_INVALID_CHAR_RANGE = "invalid character class range"
ERR_INVALID_ESCAPE = "invalid escape sequence"
ERR_INVALID_NAMED_CAPTURE = "invalid named capture"
ERR_INVALID_PERL_OP = "invalid or unsupported Perl syntax"
ERR_INVALID_REPEAT_OP = "invalid nested repetition operator"
ERR_INVALID_REPEAT_SIZE = "invalid repeat count"
ERR_MISSING_BRACKET = "missing closing ]"
ERR_MISSING_PAREN = "missing closing )"
ERR_MISSING_REPEAT_ARGUMENT = "missing argument to repetition operator"
ERR_TRAILING_BACKSLASH = "trailing backslash at end of expression"
ERR_DUPLICATE_NAMED_CAPTURE = "duplicate capture group name"

# RE2 flags that change what the parser builds (RE2.FOLD_CASE, ONE_LINE, DOT_NL, NON_GREEDY)
_FOLD, _ONE_LINE, _DOT_NL, _NON_GREEDY = 1, 2, 4, 8
_PERL_DEFAULT = _ONE_LINE  # RE2.PERL: CLASS_NL | ONE_LINE | PERL_X | UNICODE_GROUPS

Ranges = list[tuple[int, int]]

_PERL_GROUPS: dict[str, tuple[int, Ranges]] = {  # CharGroup.PERL_GROUPS: ASCII only
    "\\d": (1, [(0x30, 0x39)]),
    "\\D": (-1, [(0x30, 0x39)]),
    "\\s": (1, [(0x9, 0xA), (0xC, 0xD), (0x20, 0x20)]),
    "\\S": (-1, [(0x9, 0xA), (0xC, 0xD), (0x20, 0x20)]),
    "\\w": (1, [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]),
    "\\W": (-1, [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]),
}
_POSIX = {  # CharGroup.POSIX_GROUPS, each also as [:^name:]
    "alnum": [(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)],
    "alpha": [(0x41, 0x5A), (0x61, 0x7A)],
    "ascii": [(0x0, 0x7F)],
    "blank": [(0x9, 0x9), (0x20, 0x20)],
    "cntrl": [(0x0, 0x1F), (0x7F, 0x7F)],
    "digit": [(0x30, 0x39)],
    "graph": [(0x21, 0x7E)],
    "lower": [(0x61, 0x7A)],
    "print": [(0x20, 0x7E)],
    "punct": [(0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)],
    "space": [(0x9, 0xD), (0x20, 0x20)],
    "upper": [(0x41, 0x5A)],
    "word": [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)],
    "xdigit": [(0x30, 0x39), (0x41, 0x46), (0x61, 0x66)],
}
_POSIX_GROUPS: dict[str, tuple[int, Ranges]] = {
    **{f"[:{name}:]": (1, ranges) for name, ranges in _POSIX.items()},
    **{f"[:^{name}:]": (-1, ranges) for name, ranges in _POSIX.items()},
}
# UnicodeTables.CATEGORIES and SCRIPTS of RE2/J 1.8: the names \p{...} accepts.
_CATEGORIES = frozenset(
    "Lu Ll Lt Lm Lo Mn Me Mc Nd Nl No Zs Zl Zp Cc Cf Co Cs Pd Ps Pe Pc Po Sm Sc Sk So Pi Pf "
    "P S C Z L M N".split()
)
_SCRIPTS = frozenset(
    """Arabic Armenian Avestan Balinese Bamum Batak Bengali Bopomofo Brahmi Braille Buginese Buhid
    Canadian_Aboriginal Carian Cham Cherokee Common Coptic Cuneiform Cypriot Cyrillic Deseret Devanagari
    Egyptian_Hieroglyphs Ethiopic Georgian Glagolitic Gothic Greek Gujarati Gurmukhi Han Hangul Hanunoo
    Hebrew Hiragana Imperial_Aramaic Inherited Inscriptional_Pahlavi Inscriptional_Parthian Javanese Kaithi
    Kannada Katakana Kayah_Li Kharoshthi Khmer Lao Latin Lepcha Limbu Linear_B Lisu Lycian Lydian Malayalam
    Mandaic Meetei_Mayek Mongolian Myanmar New_Tai_Lue Nko Ogham Ol_Chiki Old_Italic Old_Persian
    Old_South_Arabian Old_Turkic Oriya Osmanya Phags_Pa Phoenician Rejang Runic Samaritan Saurashtra
    Shavian Sinhala Sundanese Syloti_Nagri Syriac Tagalog Tagbanwa Tai_Le Tai_Tham Tai_Viet Tamil Telugu
    Thaana Thai Tibetan Tifinagh Ugaritic Unknown Vai Yi""".split()
)


class Re2SyntaxError(ValueError):
    """RE2/J's ``PatternSyntaxException``: ``description`` is its ``getDescription()``, ``str()`` its
    ``getMessage()``."""

    def __init__(self, description: str, fragment: str | None = None) -> None:
        self.description = description
        self.fragment = fragment
        super().__init__(
            f"error parsing regexp: {description}" + ("" if fragment is None else f": `{fragment}`")
        )


@functools.lru_cache(maxsize=512)
def compile_re2(pattern: str) -> re.Pattern[str]:
    """The Python equivalent of ``com.google.re2j.Pattern.compile(pattern)``; raises Re2SyntaxError
    where RE2/J throws."""
    python = _Parser(pattern).parse()
    try:
        return re.compile(python)
    except re.error:  # an RE2 construct this rewriting gets wrong must not pass as a syntax error
        return re.compile("(?!)")


# ---- character sets -------------------------------------------------------------------------------


def _negate(ranges: Ranges) -> Ranges:
    out, nxt = [], 0
    for lo, hi in sorted(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = max(nxt, hi + 1)
    if nxt <= _MAX_RUNE:
        out.append((nxt, _MAX_RUNE))
    return out


def _clean(ranges: Ranges) -> Ranges:
    out: Ranges = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


@functools.cache
def _category(name: str) -> tuple[tuple[int, int], ...]:
    """The code points of a Unicode general category (one letter: the whole major class)."""
    if name in _SCRIPTS:
        return ()  # no script data in Python's standard library: documented above
    ranges: Ranges = []
    start = None
    for cp in range(sys.maxunicode + 1):
        cat = unicodedata.category(chr(cp))
        hit = cat == name or (len(name) == 1 and cat[0] == name)
        if hit and start is None:
            start = cp
        elif not hit and start is not None:
            ranges.append((start, cp - 1))
            start = None
    if start is not None:
        ranges.append((start, sys.maxunicode))
    return tuple(ranges)


def _class_pattern(ranges: Ranges, fold: bool) -> str:
    ranges = _clean(ranges)
    if not ranges:
        return "(?!)"  # RE2's empty class matches nothing
    body = "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges)
    return f"(?i:[{body}])" if fold else f"[{body}]"


# ---- the parser -------------------------------------------------------------------------------------


class _Frame:
    """One open group: its alternatives so far and the items of the current one."""

    def __init__(self, opener: str, flags: int) -> None:
        self.opener = opener  # "(", "(?:" or "" for the whole pattern
        self.flags = flags  # restored at its ')'
        self.alternatives: list[str] = []
        self.items: list[str] = []

    def close(self) -> str:
        return "|".join([*self.alternatives, "".join(self.items)])


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.s = pattern
        self.pos = 0
        self.flags = _PERL_DEFAULT
        self.frames = [_Frame("", self.flags)]
        self.names: set[str] = set()

    # -- helpers

    def more(self) -> bool:
        return self.pos < len(self.s)

    def peek(self) -> str:
        return self.s[self.pos]

    def looking_at(self, text: str) -> bool:
        return self.s.startswith(text, self.pos)

    def push(self, item: str) -> None:
        self.frames[-1].items.append(item)

    def literal(self, rune: int) -> None:
        text = re.escape(chr(rune))
        self.push(f"(?i:{text})" if self.flags & _FOLD else text)

    # -- the main loop (Parser.parseInternal)

    def parse(self) -> str:
        last_repeat = -1
        while self.more():
            repeat_pos = -1
            c = self.peek()
            if c == "(":
                if self.looking_at("(?"):
                    self.perl_flags()
                else:
                    self.frames.append(_Frame("(", self.flags))
                    self.pos += 1
            elif c == "|":
                frame = self.frames[-1]
                frame.alternatives.append("".join(frame.items))
                frame.items = []
                self.pos += 1
            elif c == ")":
                self.right_paren()
                self.pos += 1
            elif c == "^":
                self.push("\\A" if self.flags & _ONE_LINE else "(?m:^)")
                self.pos += 1
            elif c == "$":
                self.push("\\Z" if self.flags & _ONE_LINE else "(?m:$)")
                self.pos += 1
            elif c == ".":
                self.push("(?s:.)" if self.flags & _DOT_NL else ".")
                self.pos += 1
            elif c == "[":
                self.parse_class()
            elif c in "*+?":
                repeat_pos = self.pos
                self.pos += 1
                self.repeat(c, repeat_pos, last_repeat)
            elif c == "{":
                repeat_pos = self.pos
                bounds = self.parse_repeat()
                if bounds is None:  # not a repeat: '{' is a literal
                    self.pos = repeat_pos + 1
                    self.literal(ord("{"))
                else:
                    lo, hi = bounds
                    quantifier = f"{{{lo}}}" if lo == hi else f"{{{lo},{'' if hi < 0 else hi}}}"
                    self.repeat(quantifier, repeat_pos, last_repeat)
            elif c == "\\":
                self.backslash()
            else:
                self.literal(ord(c))
                self.pos += 1
            last_repeat = repeat_pos
        if len(self.frames) != 1:
            raise Re2SyntaxError(ERR_MISSING_PAREN, self.s)
        return self.frames[0].close()

    def repeat(self, quantifier: str, before: int, last_repeat: int) -> None:
        greedy_flip = False
        if self.more() and self.peek() == "?":
            self.pos += 1
            greedy_flip = True
        if last_repeat != -1:  # a** and a++ are errors in Perl mode
            raise Re2SyntaxError(ERR_INVALID_REPEAT_OP, self.s[last_repeat : self.pos])
        items = self.frames[-1].items
        if not items:  # nothing, '(' or '|' before it
            raise Re2SyntaxError(ERR_MISSING_REPEAT_ARGUMENT, self.s[before : self.pos])
        lazy = bool(self.flags & _NON_GREEDY) != greedy_flip
        items[-1] = f"(?:{items[-1]}){quantifier}{'?' if lazy else ''}"

    def parse_repeat(self) -> tuple[int, int] | None:
        """{min}, {min,} or {min,max}; None where it is not of that form (Parser.parseRepeat)."""
        start = self.pos
        self.pos += 1  # '{'
        lo = self.parse_int()
        if lo == -1 or not self.more():
            return None
        if self.peek() != ",":
            hi = lo
        else:
            self.pos += 1
            if not self.more():
                return None
            if self.peek() == "}":
                hi = -1
            else:
                hi = self.parse_int()
                if hi == -1:
                    return None
        if not self.more() or self.peek() != "}":
            return None
        self.pos += 1
        if lo < 0 or lo > _MAX_REPEAT or hi == -2 or hi > _MAX_REPEAT or (hi >= 0 and lo > hi):
            raise Re2SyntaxError(ERR_INVALID_REPEAT_SIZE, self.s[start : self.pos])
        return lo, hi

    def parse_int(self) -> int:
        start = self.pos
        while self.more() and "0" <= self.peek() <= "9":
            self.pos += 1
        digits = self.s[start : self.pos]
        if not digits or (len(digits) > 1 and digits[0] == "0"):
            return -1
        if len(digits) > 8:
            return -2
        return int(digits)

    def right_paren(self) -> None:
        if len(self.frames) < 2:  # RE2/J finds its stack one short: "stack underflow"
            raise Re2SyntaxError(ERR_INTERNAL_ERROR, "stack underflow")
        frame = self.frames.pop()
        self.flags = frame.flags
        self.push(f"{frame.opener}{frame.close()})")

    def perl_flags(self) -> None:
        """``(?P<name>``, ``(?<name>``, ``(?flags)`` and ``(?flags:`` (Parser.parsePerlFlags)."""
        start = self.pos
        rest = self.s[start:]
        if rest.startswith("(?P<") or rest.startswith("(?<"):
            begin = 4 if rest[2] == "P" else 3
            end = rest.find(">", begin)
            if end < 0:
                raise Re2SyntaxError(ERR_INVALID_NAMED_CAPTURE, rest)
            name = rest[begin:end]
            self.pos += end + 1
            if not name or not all(ch == "_" or (ch.isascii() and ch.isalnum()) for ch in name):
                raise Re2SyntaxError(ERR_INVALID_NAMED_CAPTURE, rest[: end + 1])
            if name in self.names:
                raise Re2SyntaxError(ERR_DUPLICATE_NAMED_CAPTURE, name)
            self.names.add(name)
            self.frames.append(_Frame("(", self.flags))  # matching needs no names
            return
        self.pos += 2  # "(?"
        flags, sign, saw_flag = self.flags, 1, False
        bits = {"i": _FOLD, "s": _DOT_NL, "U": _NON_GREEDY}
        while self.more():
            c = self.s[self.pos]
            self.pos += 1
            if c in bits:
                flags = flags | bits[c] if sign > 0 else flags & ~bits[c]
                saw_flag = True
            elif c == "m":  # (?m) clears ONE_LINE
                flags = flags & ~_ONE_LINE if sign > 0 else flags | _ONE_LINE
                saw_flag = True
            elif c == "-":
                if sign < 0:
                    break
                sign, saw_flag = -1, False
            elif c in ":)":
                if sign < 0 and not saw_flag:
                    break
                if c == ":":
                    self.frames.append(_Frame("(?:", self.flags))
                self.flags = flags
                return
            else:
                break
        raise Re2SyntaxError(ERR_INVALID_PERL_OP, self.s[start : self.pos])

    def backslash(self) -> None:
        saved = self.pos
        self.pos += 1
        if self.more():
            c = self.s[self.pos]
            self.pos += 1
            if c == "A":
                self.push("\\A")
                return
            if c in "bB":
                self.push(f"(?a:\\{c})")  # RE2's word boundary is ASCII
                return
            if c == "C":
                raise Re2SyntaxError(ERR_INVALID_ESCAPE, "\\C")
            if c == "Q":
                rest = self.s[self.pos :]
                end = rest.find("\\E")
                text = rest if end < 0 else rest[:end]
                self.pos += len(text) + (2 if end >= 0 else 0)
                for ch in text:
                    self.literal(ord(ch))
                return
            if c == "z":
                self.push("\\Z")
                return
            self.pos = saved
        ranges = self.unicode_class()
        if ranges is None:
            ranges = self.perl_class_escape()
        if ranges is not None:
            self.push(_class_pattern(ranges, bool(self.flags & _FOLD)))
            return
        self.literal(self.parse_escape())

    def perl_class_escape(self) -> Ranges | None:
        group = _PERL_GROUPS.get(self.s[self.pos : self.pos + 2])
        if group is None:
            return None
        self.pos += 2
        sign, ranges = group
        return list(ranges) if sign > 0 else _negate(ranges)

    def unicode_class(self) -> Ranges | None:
        """``\\pX``, ``\\p{Name}``, ``\\P...`` and ``\\p{^Name}`` (Parser.parseUnicodeClass)."""
        start = self.pos
        if not (self.looking_at("\\p") or self.looking_at("\\P")):
            return None
        sign = -1 if self.s[start + 1] == "P" else 1
        self.pos += 2
        if not self.more():
            raise Re2SyntaxError(ERR_INVALID_CHAR_RANGE, self.s[start:])
        c = self.s[self.pos]
        self.pos += 1
        if c != "{":
            name = c
        else:
            end = self.s.find("}", self.pos)
            if end < 0:
                raise Re2SyntaxError(ERR_INVALID_CHAR_RANGE, self.s[start:])
            name = self.s[self.pos : end]
            self.pos = end + 1
        if name.startswith("^"):
            sign, name = -sign, name[1:]
        if name == "Any":
            ranges: Ranges = [(0, _MAX_RUNE)]
        elif name in _CATEGORIES or name in _SCRIPTS:
            ranges = list(_category(name))
        else:
            raise Re2SyntaxError(ERR_INVALID_CHAR_RANGE, self.s[start : self.pos])
        return ranges if sign > 0 else _negate(ranges)

    def parse_escape(self) -> int:
        """One escaped character (Parser.parseEscape): octal, hex, C escapes, or a non-word
        character; backreferences and unknown letters are errors."""
        start = self.pos
        self.pos += 1  # '\\'
        if not self.more():
            raise Re2SyntaxError(ERR_TRAILING_BACKSLASH)
        c = self.s[self.pos]
        self.pos += 1

        def octal_digit() -> bool:
            return self.more() and "0" <= self.peek() <= "7"

        if not (c.isascii() and c.isalnum()):
            return ord(c)
        if c in "1234567" and octal_digit() or c == "0":
            value = ord(c) - ord("0")
            for _ in range(2):
                if not octal_digit():
                    break
                value = value * 8 + ord(self.peek()) - ord("0")
                self.pos += 1
            return value
        if c == "x" and self.more():
            c = self.s[self.pos]
            self.pos += 1
            if c == "{":
                digits = 0
                value = 0
                while self.more():
                    c = self.s[self.pos]
                    self.pos += 1
                    if c == "}":
                        if digits:
                            return value
                        break
                    if c not in "0123456789abcdefABCDEF":
                        break
                    value = value * 16 + int(c, 16)
                    if value > _MAX_RUNE:
                        break
                    digits += 1
            elif self.more() and c in "0123456789abcdefABCDEF":
                second = self.s[self.pos]
                self.pos += 1
                if second in "0123456789abcdefABCDEF":
                    return int(c + second, 16)
        simple = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
        if c in simple and self.s[start + 1] == c:
            return simple[c]
        raise Re2SyntaxError(ERR_INVALID_ESCAPE, self.s[start : self.pos])

    def parse_class(self) -> None:
        """``[...]`` (Parser.parseClass)."""
        start = self.pos
        self.pos += 1
        ranges: Ranges = []
        sign = 1
        if self.more() and self.peek() == "^":
            sign = -1
            self.pos += 1
        first = True
        while not self.more() or self.peek() != "]" or first:
            first = False
            before = self.pos
            if self.looking_at("[:"):
                end = self.s.find(":]", self.pos)
                if end >= 0:
                    name = self.s[self.pos : end + 2]
                    self.pos = end + 2
                    group = _POSIX_GROUPS.get(name)
                    if group is None:
                        raise Re2SyntaxError(ERR_INVALID_CHAR_RANGE, name)
                    ranges += group[1] if group[0] > 0 else _negate(group[1])
                    continue
            unicode_ranges = self.unicode_class()
            if unicode_ranges is not None:
                ranges += unicode_ranges
                continue
            perl_ranges = self.perl_class_escape()
            if perl_ranges is not None:
                ranges += perl_ranges
                continue
            self.pos = before
            lo = self.class_char(start)
            hi = lo
            if self.more() and self.peek() == "-":
                self.pos += 1
                if self.more() and self.peek() == "]":
                    self.pos -= 1  # [a-] is a or -
                else:
                    hi = self.class_char(start)
                    if hi < lo:
                        raise Re2SyntaxError(ERR_INVALID_CHAR_RANGE, self.s[before : self.pos])
            ranges.append((lo, hi))
        self.pos += 1  # ']'
        self.push(_class_pattern(ranges if sign > 0 else _negate(_clean(ranges)), bool(self.flags & _FOLD)))

    def class_char(self, class_start: int) -> int:
        if not self.more():
            raise Re2SyntaxError(ERR_MISSING_BRACKET, self.s[class_start:])
        if self.peek() == "\\":
            return self.parse_escape()
        c = self.s[self.pos]
        self.pos += 1
        return ord(c)
