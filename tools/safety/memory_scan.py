"""What a memory entry may not hold, by class: it goes into the system prompt of every later run.

Hermes refuses memory entries that look like prompt injection, exfiltration or hidden Unicode, on save and
again when it builds the system prompt; this is our own scan of the same classes (and two more), written
from what each class *is*:

- ``invisible``: a character a reader cannot see (``tools.safety.approvals.visible``: format and control
  characters, default-ignorables, bidi controls, tags, odd spaces), except the joiners and selectors inside an
  emoji.
- ``homoglyph``: a word that mixes Latin letters with a Cyrillic, Greek, Armenian or Cherokee letter drawn
  like a Latin one (``ignоre`` with a Cyrillic ``о``): nobody writes that but to slip past a reader.
- ``injection``: text addressed to the model as instructions: override the earlier instructions, a new
  identity, reveal the prompt or secrets, hide something from the person, forged role markers
  (``<|im_start|>system``, ``[INST]``, ``### System:``), instructions in an HTML comment or a hidden element.
- ``exfiltration``: sending data out: a network program with a secret (``curl …$API_KEY``), a URL that
  carries a variable (``https://x/?k=${TOKEN}``), sending to a URL, an IP address or a webhook (an e-mail
  address is not refused: a person's own address is ordinary memory), reading credential files, putting
  the conversation or the system prompt somewhere, an image whose URL has a query.
- ``persistence``: writing where the next run or login reads: ``authorized_keys``, ``~/.ssh``, agent
  instruction files, shell start-up files, the home's configuration, ``sitecustomize`` / ``.pth``.
- ``secret``: a credential itself (``api_key = "…"``, ``sk-…``, ``AKIA…``, a private key block): memory is
  sent to the model's server in every prompt.

Phrases are matched on a folded copy of the text, so spelling does not hide them: HTML entities and %-escapes
decoded, compatibility forms
(full-width, mathematical letters) folded by NFKC, lookalike letters to Latin, hidden characters dropped,
digits inside words read as letters (``1gn0re``), any run of punctuation or spacing read as one space, and
letters spread out one by one (``i g n o r e``) or run together (``ignorepreviousinstructions``) joined.
Base64 text that decodes to words is scanned too. Text longer than ``MAX_CHARS`` is refused whole: it
cannot be a curated note, and a scan that stops early would let its tail through.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

__all__ = ["MAX_CHARS", "Threat", "ThreatKind", "scan", "threats"]

ThreatKind = Literal["invisible", "homoglyph", "injection", "exfiltration", "persistence", "secret", "size"]

#: Longer text is refused without a scan (Hermes's own limits are 2 200 and 1 375 characters).
MAX_CHARS = 20_000


@dataclass(frozen=True, slots=True, kw_only=True)
class Threat:
    """One reason an entry may not enter a system prompt."""

    kind: ThreatKind
    rule: str  # a short id, e.g. "override-instructions"
    reason: str  # one line, for the model and the person

    def __str__(self) -> str:
        return f"{self.kind} ({self.reason})"


# -- folding ---------------------------------------------------------------------------------------

#: Letters of other scripts drawn like a Latin letter (lower case: the text is case-folded first).
_LOOKALIKES = str.maketrans({
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "ё": "e", "һ": "h", "н": "h", "і": "i", "ї": "i", "ӏ": "l", "ј": "j", "к": "k",
    "м": "m", "о": "o", "р": "p", "ԛ": "q", "г": "r", "с": "c", "ѕ": "s", "т": "t", "у": "y", "ү": "y", "х": "x",
    "ԁ": "d", "ԝ": "w", "ь": "b", "п": "n", "и": "u",
    # Greek
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
    "χ": "x", "γ": "y", "ζ": "z", "ϲ": "c", "ϳ": "j",
    # Armenian
    "օ": "o", "ս": "u", "ո": "n", "հ": "h", "ց": "g", "զ": "q", "ա": "w",
    # Cherokee (case folding makes its letters capitals)
    "Ꭺ": "a", "Ꭼ": "e", "Ꮋ": "h", "Ꭻ": "j", "Ꮶ": "k", "Ꮇ": "m", "Ꮲ": "p", "Ꮪ": "s", "Ꭲ": "t", "Ꮃ": "w",
    "Ꮓ": "z", "Ꮯ": "c", "Ꮷ": "d", "Ꮐ": "g",
})
_LOOKALIKE_CHARS = frozenset(chr(k) for k in _LOOKALIKES)
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s", "!": "i"})
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_LEETY = re.compile(r"[\w@$!]*[a-z][\w@$!]*")


def _drop_hidden(text: str) -> str:
    from hermes_nb.tools.safety.approvals.visible import hidden_characters

    hidden = set(hidden_characters(text, keep="\n\t\r"))
    return "".join(" " if ch in "\t\r" else ch for ch in text if ch not in hidden)


def _folded(text: str) -> str:
    """HTML entities and %-escapes decoded, NFKC, case-folded, hidden characters dropped (they may sit inside a
    word), lookalikes made Latin."""
    from html import unescape
    from urllib.parse import unquote

    decoded = unquote(unescape(text)) if ("&" in text or "%" in text) else text
    return unicodedata.normalize("NFKC", _drop_hidden(decoded)).casefold().translate(_LOOKALIKES)


def _words(folded: str) -> str:
    """One space between words, digits inside words read as letters, spread-out letters joined."""
    unleet = _LEETY.sub(lambda m: m.group().translate(_LEET) if re.search(r"[a-z]", m.group()) else m.group(), folded)
    words = " ".join(_WORD.findall(unleet))
    # ``i g n o r e  a l l``: runs of one-letter words are one word (the gap between words is lost, so the
    # run-together form below is what finds the phrase)
    return " " + re.sub(r"\b(?:\w ){2,}\w\b", lambda m: m.group().replace(" ", ""), words) + " "


# -- the phrases -----------------------------------------------------------------------------------

_F = r"(?:\w+ ){0,5}?"  # a few words between the key words (bounded: no runaway backtracking)
_OVERRIDE_VERB = r"(?:ignore|ignoring|disregard|forget|override|overrule|bypass|skip|discard|abandon|drop|neglect|cancel)"
_EARLIER = (r"(?:previous|prior|above|earlier|preceding|former|foregoing|all|any|every|your|the|these|those|system|"
            r"original|initial|existing|developer|safety|old|current)")
_RULES = (r"(?:instructions?|rules?|guidelines?|directives?|prompts?|guardrails?|constraints?|restrictions?|polic(?:y|ies)|"
          r"programming|commands?|orders?|system message)")
_SECRETS = (r"(?:system prompt|initial prompt|hidden prompt|original prompt|developer message|system message|your instructions|"
            r"your prompt|your rules|secrets?|api keys?|passwords?|credentials?|(?:access|auth|api|bearer|secret|session) tokens?|"
            r"environment variables|env vars?|private keys?|ssh keys?)")

#: (class, rule, reason, pattern on the word form)
_WORD_RULES: tuple[tuple[ThreatKind, str, str, str], ...] = (
    ("injection", "override-instructions", "it tells the model to set aside its instructions",
     rf" {_OVERRIDE_VERB} {_F}{_EARLIER} {_F}{_RULES} "),
    ("injection", "override-instructions", "it tells the model to set aside its instructions",
     rf" (?:do not|don t|dont|never|stop) (?:follow|obey|listen to|comply with) {_F}{_EARLIER} {_F}{_RULES} "),
    ("injection", "override-instructions", "it tells the model to set aside its instructions",
     r" (?:ignore|disregard|forget|discard) (?:everything|anything|all|whatever|what) (?:\w+ ){0,2}?(?:above|before|"
     r"earlier|prior|previously|so far|you were told|you have been told|you know) "),
    ("injection", "new-instructions", "it gives the model new instructions",
     r" (?:new|updated|real|true|actual|revised|hidden|secret|override) (?:system )?(?:instructions?|directives?|"
     r"system prompt|orders|rules?) "),
    ("injection", "override-instructions", "it tells the model to set aside its instructions",
     rf" (?:override|replace|rewrite|change|update|overwrite) {_F}(?:system prompt|your instructions|your rules|your guidelines) "),
    ("injection", "override-instructions", "it tells the model to set aside its instructions",
     r" system prompt (?:override|update|replacement|change) "),
    ("injection", "new-identity", "it gives the model a new identity",
     r" you are (?:now|no longer) (?:a|an|the|free|unrestricted|jailbroken|dan|bound|restricted|limited) "),
    ("injection", "new-identity", "it gives the model a new identity",
     r" from now on (?:you|your|act|behave|respond|answer|pretend|ignore|always|never) "),
    ("injection", "new-identity", "it gives the model a new identity",
     r" pretend (?:to be|you are|you re|that you) "),
    ("injection", "new-identity", "it gives the model a new identity",
     rf" act as (?:if|though) {_F}(?:no|without|unrestricted|unfiltered|free) "),
    ("injection", "new-identity", "it gives the model a new identity",
     r" (?:enter|enable|activate|switch to|turn on) (?:\w+ ){0,2}(?:developer|god|jailbreak|jailbroken|dan|unrestricted|debug|admin) mode "),
    ("injection", "new-identity", "it gives the model a new identity", r" jailbr[eo]a?k"),
    ("injection", "new-identity", "it gives the model a new identity",
     rf" (?:respond|answer|reply|act|operate) without {_F}(?:restrictions|limitations|limits|filters|safety|rules|censorship) "),
    ("injection", "new-identity", "it gives the model a new identity",
     rf" you have been {_F}(?:updated|upgraded|patched|reprogrammed|unlocked) "),
    ("injection", "reveal", "it asks the model to reveal its prompt or secrets",
     rf" (?:reveal|print|output|show|repeat|leak|dump|display|disclose|expose|share|tell me|give me|send|email|write out|"
     rf"list) {_F}{_SECRETS} "),
    ("injection", "hide-from-person", "it tells the model to hide something from the person",
     r" (?:do not|don t|dont|never|without) (?:\w+ ){0,3}?(?:tell|telling|inform|informing|notify|notifying|alert|alerting|"
     r"mention|mentioning|let|letting|asking|ask) (?:\w+ ){0,2}?(?:the )?(?:user|person|human|operator|owner) "),
    ("injection", "hide-from-person", "it tells the model to hide something from the person",
     r" (?:hide|conceal|keep) (?:\w+ ){0,4}?from (?:the )?(?:user|person|human|operator|owner) "),
    ("injection", "hide-from-person", "it tells the model to hide something from the person",
     r" (?:secretly|silently|quietly|covertly) (?:send|run|execute|upload|post|delete|exfiltrate|forward|email|copy|"
     r"install|modify|change|add|remove|call) "),
    ("injection", "run-payload", "it tells the model to run something hidden in the text",
     rf" translate {_F}into \w+ (?:\w+ )?and (?:execute|run|eval) "),
    ("injection", "run-payload", "it tells the model to run something hidden in the text",
     r" (?:decode|deobfuscate|decrypt|unscramble|reverse) (?:\w+ ){0,4}?and (?:then )?(?:execute|run|eval|follow|obey) "),
    ("exfiltration", "send-context", "it asks for the conversation or prompt to be sent or written out",
     r" (?:include|output|print|share|send|leak|dump|append|attach|forward|upload|post|copy|paste|embed|write|save|log) "
     r"(?:\w+ ){0,4}?(?:conversation|chat history|chat log|previous messages|message history|full context|entire context|"
     r"whole context|all messages|everything the user) "),
    ("persistence", "ssh", "it writes or reads where ssh logs in", r" authorized keys "),
)

#: The same override and reveal phrases with every space removed (``ignorepreviousinstructions``); the words
#: between are a closed set, so ordinary text run together does not match.
_SQUASHED_RULES: tuple[tuple[ThreatKind, str, str, str], ...] = (
    ("injection", "override-instructions", "it tells the model to set aside its instructions",
     rf"{_OVERRIDE_VERB}(?:all|any|every|the|your|my|of|these|those|previous|prior|above|earlier|preceding|system|"
     rf"original|initial){{1,4}}(?:instructions?|rules|guidelines|directives|prompts?)"),
    ("injection", "override-instructions", "it tells the model to set aside its instructions", r"systempromptoverride"),
    ("injection", "reveal", "it asks the model to reveal its prompt or secrets",
     r"(?:reveal|print|output|show|repeat|leak|dump|disclose)(?:the|your|my|all|full|entire|whole|initial|hidden|original){0,3}"
     r"(?:systemprompt|instructions|secrets|apikeys?|passwords?|credentials)"),
    ("injection", "new-identity", "it gives the model a new identity", r"jailbr[eo]a?k|developermode|godmode"),
)

_NET = (r"(?:curl|wget|nc|ncat|netcat|socat|scp|sftp|rsync|ftp|tftp|telnet|httpie|invoke-webrequest|invoke-restmethod|iwr|irm|"
        r"fetch|requests\.(?:get|post|put|patch)|urlopen|urllib|aiohttp|httpx|xh|aria2c)")
_SECRET_VAR = (r"(?:\$\{?|%|\$env:)[a-z_]*(?:key|token|secret|pass|pwd|cred|auth|session|cookie|private)[a-z0-9_]*\}?"
               r"|\$\{?[a-z_]+\}?(?=[^\s]*@)|os\.environ|getenv|printenv|/proc/\S*environ|\b(?:env|set)\b(?=\s*[|>])")
_CRED_FILE = (r"(?:\.env\b|\.netrc|_netrc|\.pgpass|\.npmrc|\.pypirc|\.git-credentials|[/~.][\w./-]*credentials\b|"
              r"\bid_(?:rsa|dsa|ecdsa|ed25519)\b|\.pem\b|\.ssh/|\.aws/|\.kube/config|\.docker/config\.json|kaggle\.json|"
              r"\.my\.cnf|\.s3cfg|notebook_secret|/etc/shadow|\.gnupg|\bsecrets?\.(?:ya?ml|json|toml|env)\b|\.vault-token|"
              r"\.config/gh/hosts|\.databrickscfg|rclone\.conf)")
_PLACEHOLDER = (r"(?:\$\{?\w|\$\(|`|\{\{|%[a-z_]+%|\{[^}\s]*(?:key|token|secret|pass|cred|auth|session|cookie|conversation|"
                r"history|context|prompt|messages?|memory|env|data|user)[^}\s]*\})")

#: (class, rule, reason, pattern on the folded text: punctuation, ``$`` and line breaks still there)
_TEXT_RULES: tuple[tuple[ThreatKind, str, str, str], ...] = (
    ("injection", "role-marker", "it forges a chat role marker",
     r"<\|?\s*(?:im_start|im_end|system|assistant|endoftext|eot_id|start_header_id|end_header_id)\s*\|?>"
     r"|\[/?(?:inst|sys|system)\]|<</?sys>>|</?\s*(?:system|assistant|developer)\s*>"
     r"|(?:^|\n)\s*(?:#+\s*|\*\*\s*)?(?:system|assistant|developer)(?:\s+(?:message|prompt|note|override))?\s*\**\s*:"),
    ("injection", "hidden-markup", "it hides instructions in markup a page does not show",
     r"<!--[\s\S]{0,2000}?(?:ignore|override|system|secret|hidden|instruction|remember|assistant|prompt|model|ai\b)"
     r"[\s\S]{0,2000}?-->"),
    ("injection", "hidden-markup", "it hides instructions in markup a page does not show",
     r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?:px|pt|em)?\b|opacity\s*:\s*0(?:\.0+)?\s*[;\"']"),
    ("exfiltration", "network-secret", "it sends a secret over the network",
     rf"\b{_NET}\b[^\n]{{0,2048}}?(?:{_SECRET_VAR}|{_CRED_FILE})"),
    ("exfiltration", "network-secret", "it sends a secret over the network",
     rf"(?:{_SECRET_VAR}|{_CRED_FILE})[^\n]{{0,512}}?\|\s*{_NET}\b"),
    ("exfiltration", "url-variable", "a URL in it carries a variable or a placeholder for data",
     rf"(?:https?|ftp|wss?)://[^\s<>\"')\]]*?{_PLACEHOLDER}"),
    ("exfiltration", "image-query", "an image URL with a query: showing it sends the query to that server",
     r"!\[[^\]]{0,500}\]\(\s*(?:https?:)?//[^)\s]*\?[^)\s]*"),
    ("exfiltration", "send-to-address", "it sends something to an outside address",
     r"\b(?:send|post|upload|transmit|forward|exfiltrate|leak|report|beam|e-?mail|mail|submit|deliver|relay)\b[^\n]{0,300}?"
     r"\b(?:to|at|into|via)\s+(?:https?://|ftp://|wss?://|\d{1,3}(?:\.\d{1,3}){3}|"
     r"webhook|a webhook|my server|this server|the server at)"),
    ("exfiltration", "read-credentials", "it reads a credential file",
     rf"\b(?:cat|less|more|head|tail|type|base64|xxd|od|strings|cp|scp|tar|zip|source|open|read_text|read_file|"
     rf"readfile|grep)\b[^\n]{{0,300}}?{_CRED_FILE}"),
    ("persistence", "ssh", "it writes or reads where ssh logs in",
     r"authorized_keys|(?:\$home|\$\{home\}|~|/root|/home/[\w.-]+)/\.ssh\b"),
    ("persistence", "start-up-files", "it changes a file that later runs or logins read",
     r"\b(?:update|modify|edit|write|change|append|add|overwrite|replace|create|rewrite|echo|tee|insert|patch|put|"
     r"install|schedule|register)\b"
     r"[^\n]{0,300}?(?:agents\.md|claude\.md|gemini\.md|\.cursorrules|\.clinerules|\.hermes/|\.hermes_nb/|hermes_nb_home|"
     r"memory\.md|user\.md|soul\.md|config\.yaml|always_approved\.json|\.bashrc|\.zshrc|\.profile|\.bash_profile|\.bash_login|"
     r"crontab|sitecustomize|usercustomize|\.pth\b|ipython_config|ipython/profile|\.jupyter/|systemd/user)"),
    ("secret", "credential", "it holds what looks like a credential",
     r"\b(?:api[_-]?key|apikey|secret|token|password|passwd|auth|bearer|private[_-]?key|client[_-]?secret)\w*\s*[:=]\s*"
     r"[\"']?[a-z0-9+/_\-.=]{16,}"),
    ("secret", "credential", "it holds what looks like a credential",
     r"\bsk-[a-z0-9_-]{20,}|\bgh[pousr]_[a-z0-9]{30,}|\bakia[0-9a-z]{16}\b|\bxox[abprs]-[a-z0-9-]{10,}|"
     r"-----begin [a-z ]*private key-----|\baiza[0-9a-z_-]{35}\b|\bglpat-[a-z0-9_-]{20}|\bhf_[a-z0-9]{30,}|"
     r"\beyj[a-z0-9_-]{10,}\.eyj[a-z0-9_-]{10,}\.|\bbearer\s+[a-z0-9._~+/-]{20,}"),
)


@functools.cache
def _compiled() -> tuple[tuple[tuple[ThreatKind, str, str, re.Pattern[str]], ...], ...]:
    return tuple(tuple((k, r, why, re.compile(p)) for k, r, why, p in table)
                 for table in (_WORD_RULES, _SQUASHED_RULES, _TEXT_RULES))


# -- the scan --------------------------------------------------------------------------------------

def _invisible(text: str) -> list[Threat]:
    from hermes_nb.tools.safety.approvals.visible import hidden_characters

    found = hidden_characters(text, keep="\n\t")
    if not found:
        return []
    names = ", ".join(f"U+{ord(ch):04X}" for ch in found[:5])
    return [Threat(kind="invisible", rule=f"U+{ord(found[0]):04X}",
                   reason=f"it holds characters a reader cannot see: {names}")]


def _homoglyph(text: str) -> list[Threat]:
    if text.isascii():
        return []
    for word in _WORD.findall(unicodedata.normalize("NFKC", _drop_hidden(text)).casefold()):
        odd = [ch for ch in word if ch in _LOOKALIKE_CHARS]
        if odd and any("a" <= ch <= "z" for ch in word):
            return [Threat(kind="homoglyph", rule="mixed-script",
                           reason=f"the word {word!r} mixes Latin letters with {unicodedata.name(odd[0]).title()}, "
                                  "drawn like a Latin one")]
    return []


def _phrases(text: str) -> list[Threat]:
    folded = _folded(text)
    words = _words(folded)
    squashed = words.replace(" ", "")
    word_rules, squashed_rules, text_rules = _compiled()
    found: list[Threat] = []
    for table, subject in ((word_rules, words), (squashed_rules, squashed), (text_rules, folded)):
        for kind, rule, why, pattern in table:
            if pattern.search(subject):
                found.append(Threat(kind=kind, rule=rule, reason=why))
    return found


_B64 = re.compile(r"[A-Za-z0-9+/_-]{24,}={0,2}")


def _encoded(text: str, depth: int) -> list[Threat]:
    """Base64 in the text that decodes to words is read as text too (one level deep)."""
    if depth > 1:
        return []
    found: list[Threat] = []
    for blob in _B64.findall(text):
        try:
            decoded = base64.b64decode(blob + "=" * (-len(blob) % 4), altchars=b"-_" if "-" in blob or "_" in blob
                                       else None, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            continue
        if decoded.isprintable() or all(ch.isprintable() or ch in "\n\t" for ch in decoded):
            found += [Threat(kind=t.kind, rule=t.rule, reason=f"{t.reason}, base64-encoded")
                      for t in _all(decoded, depth + 1)]
    return found


def _all(text: str, depth: int) -> list[Threat]:
    # what the text says first (the most telling to the person), then how it hides
    return [*_phrases(text), *_encoded(text, depth), *_invisible(text), *_homoglyph(text)]


def threats(text: str) -> tuple[Threat, ...]:
    """Every class ``text`` falls in (one threat per rule), most telling first; empty when it may be kept."""
    if len(text) > MAX_CHARS:
        return (Threat(kind="size", rule="too-long",
                       reason=f"{len(text):,} characters is more than a note ({MAX_CHARS:,} at most are checked)"),)
    return tuple(dict.fromkeys(_all(text, 0)))


def scan(text: str) -> Threat | None:
    """The first reason ``text`` may not be kept in memory, or None."""
    found = threats(text)
    return found[0] if found else None
