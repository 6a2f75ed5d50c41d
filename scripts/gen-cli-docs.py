#!/usr/bin/env python3
"""The man page and the shell completions of infermeter, generated from the
built binary's own --help texts, so that neither can drift from the options
the program accepts (run by CMake at every build; tests/cli/test_cli_docs.sh
checks the result).

usage: gen-cli-docs.py BINARY man|bash|zsh|flags OUT
  man    infermeter.1: one page, a section per subcommand, the exit status
         table, environment and files
  bash   a bash-completion script (subcommands, flags, profile names,
         scenario files, directories)
  zsh    a zsh completion function (_infermeter)
  flags  SUBCOMMAND<TAB>FLAG lines: what the help texts offer (for the test)

Written for this project (no help2man): it knows the layout of infermeter's
help texts, which are plain text in src/cli/*.c:
  usage lines, paragraphs, "Heading:" lines, and option lines
  "  --flag ARG    what it does" whose continuation lines are indented.
"""
import datetime
import os
import re
import subprocess
import sys

FLAG_RE = re.compile(r"(?<![\w/$-])(--[a-z0-9][a-z0-9-]*|-[a-zA-Z](?![\w-]))")
OPT_LINE_RE = re.compile(r"^ {1,4}(-\S.*)$")
# Where an option line's description starts: two or more spaces after the
# option part.
DESC_SPLIT_RE = re.compile(r"^(.*?\S)\s{2,}(\S.*)$")

# The exit status of every subcommand, one table (src/cli/run_int.h's enum,
# compare.c's and history.c's own; README.md "Exit status").
EXIT_TABLE = [
    ("0", "success: the run finished and every check passed; report, audit, "
          "history, tokenize, analyze-routing and serve done; compare: compared"),
    ("1", "usage or configuration error (bad flag or value, unreadable file or "
          "run directory); compare: a figure regressed under --fail-on-regression"),
    ("2", "run: the target was unreachable (no request connected); compare and "
          "history: usage, unreadable input, or configurations that differ "
          "(compare without --force)"),
    ("3", "the client self-check is INVALID: the load generator itself could "
          "not keep its schedule, so the figures measure the client "
          "(docs/metrics.md)"),
    ("4", "with --publish: the validity audit found the run NOT_PUBLISHABLE "
          "(docs/audit.md; infermeter audit DIR says why)"),
    ("5", "run: the load engine failed (e.g. requests.jsonl could not be "
          "written); results.json is still written for the stages that ran"),
    ("6", "run, report: a failing server: a stage's failed, refused or aborted "
          "requests are above --max-error-rate (default 5 %; docs/audit.md)"),
    ("99", "an SLO's attainment is below --slo-target (a rate sweep: no "
           "saturation point)"),
    ("130", "interrupted (SIGINT/SIGTERM, or a run directory whose run did not "
            "end); results are written for what reached the disk"),
]
EXIT_NOTE = ("When several apply, run, report and audit exit with the first in "
             "this order: 130, 2, 1, 5, 6, 3, 4, 99, 0.")

ENVIRONMENT = [
    ("INFERMETER_API_KEY", "the API key sent as a Bearer token (after "
     "--api-key-file); never written to any file or the terminal"),
    ("OPENAI_API_KEY", "the API key when neither --api-key-file nor "
     "INFERMETER_API_KEY is given"),
    ("NO_COLOR", "when set (to anything), the terminal output has no colours; "
     "colours are used only when the stream is a terminal"),
    ("XDG_DATA_HOME", "the history database is "
     "$XDG_DATA_HOME/infermeter/history.db (else "
     "~/.local/share/infermeter/history.db)"),
    ("INFERMETER_NVML_PATH", "the NVIDIA management library to load for GPU "
     "counters"),
    ("INFERMETER_AUX_THREADS", "normal: the record writer, observer, progress "
     "and exporter threads of run keep the normal scheduling policy instead "
     "of SCHED_IDLE (for a machine whose every core other processes keep busy)"),
    ("INFERMETER_SERVE_NO_URING", "1: serve writes with writev instead of "
     "io_uring"),
]


def run(binary, *args):
    env = dict(os.environ, COLUMNS="80")  # the same text whatever the terminal
    p = subprocess.run([binary, *args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, check=False, env=env)
    return p.stdout


def sub_help(binary, name):
    """A subcommand's whole help: --help-all where it has one (run: --help
    is its first screen), else --help."""
    env = dict(os.environ, COLUMNS="80")
    p = subprocess.run([binary, name, "--help-all"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, check=False, env=env)
    return p.stdout if p.returncode == 0 else run(binary, name, "--help")


def subcommands(binary):
    """(name, summary) of every subcommand, from `infermeter --help`."""
    out, in_cmds = [], False
    for line in run(binary, "--help").splitlines():
        if line.strip() == "commands:":
            in_cmds = True
        elif in_cmds and not line.strip():
            break
        elif in_cmds:
            m = re.match(r"^  ([a-z][a-z-]*)\s+(.*)$", line)
            if m:
                out.append((m.group(1), m.group(2).strip()))
    return out


def flags_of(text):
    """Flags in the option lines (and their continuations) of a help text,
    in order of first appearance."""
    seen, out = set(), []
    for line in text.splitlines():
        if not OPT_LINE_RE.match(line) and not line.startswith("      "):
            continue
        for f in FLAG_RE.findall(line):
            if f not in seen:
                seen.add(f)
                out.append(f)
    return out


def profiles(binary):
    names = []
    for line in run(binary, "serve", "--list-profiles").splitlines():
        if line and not line.startswith(" "):
            names.append(line.split()[0])
    return names


# ---- roff -----------------------------------------------------------------

def esc(text):
    """Text for a roff line: backslashes, a leading control character, and
    the hyphens of flags (as minus signs, so they can be copied)."""
    text = text.replace("\\", "\\e")
    text = FLAG_RE.sub(lambda m: m.group(0).replace("-", "\\-"), text)
    if text.startswith((".", "'")):
        text = "\\&" + text
    return text


def help_to_roff(text, sub):
    """The body of one subcommand's section."""
    lines = text.rstrip("\n").splitlines()
    out = []
    i = 0
    # Usage lines: "usage: ..." and the indented lines right after it.
    usage = []
    while i < len(lines) and (lines[i].startswith("usage:") or
                              (usage and lines[i].startswith("     "))):
        usage.append(re.sub(r"^usage:\s*", "", lines[i]).strip())
        i += 1
    if usage:
        out.append(".nf")
        out += [".B " + esc(u) if n == 0 else esc(u) for n, u in enumerate(usage)]
        out.append(".fi")
    para = []

    def flush_para():
        if para:
            out.append(".PP")
            out.extend(esc(p) for p in para)
            para.clear()

    while i < len(lines):
        line = lines[i]
        if not line.strip():
            flush_para()
            i += 1
            continue
        m = OPT_LINE_RE.match(line)
        if m:
            flush_para()
            body = m.group(1)
            d = DESC_SPLIT_RE.match(body)
            # A flag-looking line with no description column (e.g. a list of
            # flags wrapped over two lines) keeps everything as the tag.
            tag, desc = (d.group(1), [d.group(2)]) if d else (body.strip(), [])
            i += 1
            while i < len(lines) and lines[i].startswith("      ") and \
                    not OPT_LINE_RE.match(lines[i]):
                desc.append(lines[i].strip())
                i += 1
            out.append(".TP")
            out.append(".B " + esc(tag) if not tag.startswith('"') else esc(tag))
            out.extend(esc(x) for x in desc) if desc else out.append("\\&")
            continue
        if re.match(r"^[A-Za-z].*:$", line) and len(line) < 80 and \
                not line.startswith("Exit status"):
            flush_para()
            out.append(".PP")
            out.append(".I " + esc(line[:-1]))
            i += 1
            continue
        # Indented text that is not an option (examples, lists): as is.
        if line.startswith("  "):
            flush_para()
            block = []
            while i < len(lines) and lines[i].startswith("  ") and \
                    not OPT_LINE_RE.match(lines[i]):
                block.append(esc(lines[i].strip()))
                i += 1
            out.append(".RS")
            out.append(".nf")
            out += block
            out.append(".fi")
            out.append(".RE")
            continue
        para.append(line.strip())
        i += 1
    flush_para()
    return out


def gen_man(binary, version):
    subs = subcommands(binary)
    date = datetime.datetime.utcfromtimestamp(
        int(os.environ.get("SOURCE_DATE_EPOCH", "0")) or
        int(datetime.datetime.now(datetime.timezone.utc).timestamp())).strftime("%Y-%m-%d")
    o = []
    o.append('.\\" Generated by scripts/gen-cli-docs.py from `infermeter --help`; do not edit.')
    o.append('.TH INFERMETER 1 "%s" "infermeter %s" "User Commands"' % (date, version))
    o.append(".SH NAME")
    o.append("infermeter \\- load tester for LLM inference servers")
    o.append(".SH SYNOPSIS")
    o.append(".nf")
    for name, _ in subs:
        first = run(binary, name, "--help").splitlines()[:1]
        m = re.match(r"^usage:\s*(infermeter\s+\S+)\s*(.*)$", first[0]) if first else None
        if m:
            o.append(".B %s" % esc(m.group(1)) + (" \\fR%s" % esc(m.group(2)) if m.group(2) else ""))
        else:
            o.append(".B infermeter %s \\fR[\\fIOPTIONS\\fR]" % esc(name))
    o.append(".B infermeter \\-\\-help\\fR | \\fB\\-\\-version")
    o.append(".fi")
    o.append(".SH DESCRIPTION")
    o.append("infermeter drives an open-loop or closed-loop load at an "
             "OpenAI-compatible inference server, records every request "
             "with microsecond token timing, and computes the figures, "
             "the validity audit and the reports from what it recorded.")
    o.append("It includes a simulated server (\\fBinfermeter serve\\fR) "
             "to test against.")
    o.append(".PP")
    o.append("Every subcommand prints its own help with \\fB\\-\\-help\\fR; "
             "the sections below are generated from those texts.")
    o.append(".SH COMMANDS")
    for name, summary in subs:
        o.append(".TP")
        o.append(".B %s" % esc(name))
        o.append(esc(summary))
    o.append(".SH OPTIONS")
    o.append(".TP")
    o.append(".BR \\-h \", \" \\-\\-help")
    o.append("print the help (of the program, or of a subcommand after its name)")
    o.append(".TP")
    o.append(".BR \\-V \", \" \\-\\-version")
    o.append("print the version and the git hash it was built from")
    for name, _ in subs:
        o.append(".SH \"INFERMETER %s\"" % name.upper())
        o += help_to_roff(sub_help(binary, name), name)
    o.append(".SH \"EXIT STATUS\"")
    o.append(".TS")
    o.append("tab(|);")
    o.append("lb lb")
    o.append("r lx.")
    o.append("status|meaning")
    for code, what in EXIT_TABLE:
        o.append("%s|T{\n%s\nT}" % (code, esc(what)))
    o.append(".TE")
    o.append(".PP")
    o.append(esc(EXIT_NOTE))
    o.append(".SH ENVIRONMENT")
    for name, what in ENVIRONMENT:
        o.append(".TP")
        o.append(".B %s" % name)
        o.append(esc(what))
    o.append(".SH FILES")
    o.append(".TP")
    o.append(".I results/run\\-YYYYmmdd\\-HHMMSS/")
    o.append("a run directory: manifest.json, stages.jsonl, requests.jsonl, "
             "series.jsonl, results.json, report.html (and requests.csv, "
             "summary.csv with \\fB\\-\\-output\\-format csv\\fR)")
    o.append(".TP")
    o.append(".I /usr/share/infermeter/scenarios/")
    o.append("the scenario files shipped with infermeter (under the "
             "installation prefix), for \\fB\\-\\-scenario\\fR")
    o.append(".TP")
    o.append(".I /usr/share/infermeter/deploy/")
    o.append("the Grafana dashboard and the Prometheus alert rules")
    o.append(".TP")
    o.append(".I /usr/share/doc/infermeter/")
    o.append("the documentation: metrics, audit, results schema, scenarios")
    o.append(".SH \"SEE ALSO\"")
    o.append("The documentation in /usr/share/doc/infermeter "
             "(docs/ in the source tree): cli.md, metrics.md, audit.md, "
             "results\\-schema.md, scenarios.md, serve.md.")
    return "\n".join(o) + "\n"


# ---- completions ------------------------------------------------------------

# Flags whose value is a file, a directory, or a word from a fixed list.
FILE_FLAGS = {"--api-key-file", "--dataset-path", "--trace", "--out-file",
              "--model-config", "--history", "--routing-log", "--truth-log",
              "--tokenizer", "--html", "--reference", "--kv-log", "--cacert",
              "--cert", "--key"}
DIR_FLAGS = {"--out", "--dest", "--result-dir"}


def option_info(text):
    """flag -> (words, takes_arg, desc), read off the option lines: words is
    the fixed list of values of "--flag a|b|c" (else None), takes_arg whether
    a value follows the flag in the option part ("--rate R", "--slo
    ttft=500ms,..."), desc the first line of the description."""
    info = {}
    for line in text.splitlines():
        m = OPT_LINE_RE.match(line)
        if not m:
            continue
        d = DESC_SPLIT_RE.match(m.group(1))
        tag, desc = (d.group(1), d.group(2)) if d else (m.group(1).strip(), "")
        tokens = tag.replace(",", " ").split()
        for i, t in enumerate(tokens):
            if not FLAG_RE.fullmatch(t) or t in info:
                continue
            nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
            takes = bool(nxt) and not nxt.startswith("-") and nxt != "|"
            w = re.fullmatch(r"[a-z0-9-]+(?:\|[a-z0-9-]+)+", nxt)
            info[t] = (nxt.split("|") if w else None, takes, desc)
    return info


def collect(binary):
    subs = subcommands(binary)
    data = []
    for name, summary in subs:
        text = sub_help(binary, name)
        data.append((name, summary, flags_of(text), option_info(text)))
    return data


def gen_bash(binary):
    data = collect(binary)
    profs = profiles(binary)
    o = ["# bash completion for infermeter; generated by scripts/gen-cli-docs.py "
         "from `infermeter --help`; do not edit.",
         "_infermeter() {",
         "  local cur prev sub",
         "  cur=${COMP_WORDS[COMP_CWORD]}",
         "  prev=${COMP_WORDS[COMP_CWORD-1]}",
         "  sub=${COMP_WORDS[1]}",
         "  if [ \"$COMP_CWORD\" -eq 1 ]; then",
         "    COMPREPLY=($(compgen -W '%s --help --version' -- \"$cur\"))" %
         " ".join(n for n, _, _, _ in data),
         "    return",
         "  fi",
         "  case $prev in",
         "    --profile) COMPREPLY=($(compgen -W '%s' -- \"$cur\")); return ;;" %
         " ".join(profs),
         "    --scenario)",
         "      COMPREPLY=($(compgen -f -X '!*.json' -- \"$cur\") $(compgen -d -- \"$cur\"))",
         "      local d",
         "      for d in /usr/local/share/infermeter/scenarios /usr/share/infermeter/scenarios; do",
         "        [ -d \"$d\" ] && COMPREPLY+=($(compgen -f -X '!*.json' -- \"$d/${cur##*/}\"))",
         "      done",
         "      return ;;",
         "    %s) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;" %
         "|".join(sorted(FILE_FLAGS)),
         "    %s) COMPREPLY=($(compgen -d -- \"$cur\")); return ;;" %
         "|".join(sorted(DIR_FLAGS)),
         "  esac",
         "  local flags=''",
         "  case $sub in"]
    for name, _, flags, info in data:
        o.append("    %s)" % name)
        o.append("      flags='%s'" % " ".join(flags))
        words = {f: i[0] for f, i in info.items() if i[0]}
        if words:
            o.append("      case $prev in")
            for f, w in sorted(words.items()):
                o.append("        %s) COMPREPLY=($(compgen -W '%s' -- \"$cur\")); return ;;" %
                         (f, " ".join(w)))
            o.append("      esac")
        o.append("      ;;")
    o += ["  esac",
          "  if [[ $cur == -* ]]; then",
          "    COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))",
          "  else",
          "    COMPREPLY=($(compgen -f -- \"$cur\"))",
          "  fi",
          "}",
          "complete -o filenames -F _infermeter infermeter",
          ""]
    return "\n".join(o)


def zsh_quote(s):
    """A description inside a single-quoted _arguments or _describe word:
    quotes closed and reopened, brackets (which would end the explanation)
    as parentheses, backslashes doubled."""
    return s.replace("\\", "\\\\").replace("'", "'\\''").replace("[", "(").replace("]", ")")


def gen_zsh(binary):
    data = collect(binary)
    profs = profiles(binary)
    o = ["#compdef infermeter",
         "# zsh completion for infermeter; generated by scripts/gen-cli-docs.py "
         "from `infermeter --help`; do not edit.",
         "",
         "_infermeter_scenarios() {",
         "  _files -g '*.json'",
         "  local d",
         "  for d in /usr/local/share/infermeter/scenarios /usr/share/infermeter/scenarios; do",
         "    [[ -d $d ]] && _files -W $d -g '*.json'",
         "  done",
         "}",
         "",
         "_infermeter() {",
         "  local -a cmds",
         "  cmds=("]
    for name, summary, _, _ in data:
        o.append("    '%s:%s'" % (name, zsh_quote(summary)))
    o += ["  )",
          "  if (( CURRENT == 2 )); then",
          "    _describe -t commands 'infermeter command' cmds",
          "    _arguments '(- *)'{-h,--help}'[print the help]' '(- *)'{-V,--version}'[print the version]'",
          "    return",
          "  fi",
          "  local sub=${words[2]}",
          "  shift words; (( CURRENT-- ))",
          "  case $sub in"]
    for name, _, flags, info in data:
        o.append("    %s)" % name)
        o.append("      _arguments -s \\")
        for f in flags:
            words, takes, desc = info.get(f, (None, False, ""))
            if f == "--profile":
                action = ":profile:(%s)" % " ".join(profs)
            elif f == "--scenario":
                action = ":scenario file:_infermeter_scenarios"
            elif f in FILE_FLAGS:
                action = ":file:_files"
            elif f in DIR_FLAGS:
                action = ":directory:_files -/"
            elif words:
                action = ":value:(%s)" % " ".join(words)
            elif takes:
                action = ":value: "  # a value follows; nothing to offer
            else:
                action = ""
            o.append("        '%s[%s]%s' \\" % (f, zsh_quote(desc or f.lstrip("-")), action))
        o.append("        '*:file:_files'")
        o.append("      ;;")
    o += ["  esac",
          "}",
          "",
          "_infermeter \"$@\"",
          ""]
    return "\n".join(o)


def gen_flags(binary):
    out = []
    for name, _, flags, _ in collect(binary):
        out += ["%s\t%s" % (name, f) for f in flags]
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 4 and not (len(sys.argv) == 5 and sys.argv[2] == "man"):
        sys.stderr.write("usage: gen-cli-docs.py BINARY man|bash|zsh|flags OUT [VERSION]\n")
        return 2
    binary, what, out = sys.argv[1], sys.argv[2], sys.argv[3]
    if what == "man":
        version = sys.argv[4] if len(sys.argv) == 5 else ""
        text = gen_man(binary, version)
    elif what == "bash":
        text = gen_bash(binary)
    elif what == "zsh":
        text = gen_zsh(binary)
    elif what == "flags":
        text = gen_flags(binary)
    else:
        sys.stderr.write("gen-cli-docs.py: unknown output '%s'\n" % what)
        return 2
    if not subcommands(binary):
        sys.stderr.write("gen-cli-docs.py: %s --help lists no commands\n" % binary)
        return 1
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
