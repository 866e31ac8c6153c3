"""`arenac.fmt.format_source`: golden cases, corpus round trips, whitespace fuzzing."""

from __future__ import annotations

import dataclasses
import functools
import re
from importlib import resources

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arenac.core.diagnostics import DiagnosticError
from arenac.core.source import SourceFile
from arenac.syntax.fmt import format_source
from arenac.syntax.parser import parse
from helpers import ROOT

CORPUS = sorted(
    [
        *ROOT.glob("library/**/*.arena"),
        *ROOT.glob("tasks/**/*.arena"),
        *ROOT.glob("tests/golden/*/spec.arena"),
        *(ROOT / "tests" / "fmt_cases").glob("*.arena"),
    ]
)


def shape(node):
    """The syntax tree without its spans, comparable with ==."""
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        fields = dataclasses.fields(node)
        return (type(node).__name__, tuple((f.name, shape(getattr(node, f.name))) for f in fields if f.name != "span"))
    if isinstance(node, (tuple, list)):
        return tuple(shape(item) for item in node)
    return node


def tree(text: str):
    return shape(parse(SourceFile("spec.arena", text)))


# ---- golden cases: messy input -> canonical output ---------------------------------

GOLDEN = {
    "comments-kept-in-place": (
        '# head   \n\nuse spine.faults   # why\ntask t {\n      # inside\n  x = "a # \\" b"# note\n}\n# tail\n',
        '# head\n\nuse spine.faults  # why\ntask t {\n  # inside\n  x = "a # \\" b"  # note\n}\n# tail\n',
    ),
    "triple-string-byte-for-byte": (
        'task t {\n    instruction   =   """\n   odd  indent   \n\t\ttab  # not a comment\n      """   |   "y"\n}\n',
        'task t {\n  instruction = """\n   odd  indent   \n\t\ttab  # not a comment\n      """ | "y"\n}\n',
    ),
    "indent-two-spaces-per-brace": (
        "task t {\nfault f = x.y() {\n\t  onset = at start\n        }\n"
        "      access a {\n  allow s\n} gate g {\n a <= 1\n   }\n}\n",
        "task t {\n  fault f = x.y() {\n    onset = at start\n  }\n"
        "  access a {\n    allow s\n  } gate g {\n    a <= 1\n  }\n}\n",
    ),
    "closers-on-one-line": (
        "task t {\n  access a {\n    allow x\n    } }\ntask u {\n  x = 1\n}\n",
        "task t {\n  access a {\n    allow x\n  } }\ntask u {\n  x = 1\n}\n",
    ),
    "operators-spaced": (
        "task t {\n  x=a|b|\"c\"\n  fault f = g(){\n    recur = after declare+60s\n  }\n"
        "  gate g {\n    a<=1\n    b>=c*2\n    c==d -e\n    d!=1+f\n    e<2\n    f>1-y\n  }\n}\n",
        "task t {\n  x = a | b | \"c\"\n  fault f = g() {\n    recur = after declare + 60s\n  }\n"
        "  gate g {\n    a <= 1\n    b >= c * 2\n    c == d - e\n    d != 1 + f\n    e < 2\n    f > 1 - y\n  }\n}\n",
    ),
    "hyphenated-names-untouched": (
        "task sends-fail {\n  gate g {\n    a-b <= c - d\n  }\n}\n",
        "task sends-fail {\n  gate g {\n    a-b <= c - d\n  }\n}\n",
    ),
    "comma-and-colon": (
        "load l {\n  mix a=1 ,b = 2,c=3.5\n}\naccess a {\n  kube get ,list on pods\n  admin m : /x ,/y\n}\n"
        "task t {\n  fault f = s.p( service :message , size : 4|2 )\n}\n",
        "load l {\n  mix a = 1, b = 2, c = 3.5\n}\naccess a {\n  kube get, list on pods\n  admin m: /x, /y\n}\n"
        "task t {\n  fault f = s.p(service: message, size: 4 | 2)\n}\n",
    ),
    "brackets-calls-dots-slashes": (
        "access a {\n  kube get on pods / log , deployments . apps [ a-b , c ],x\n  admin m:/admin/config\n}\n"
        "macro m ( a , b ) {\n  p99 ( a , phase : peak ) <= 1.2 * baseline . p99 ( b )\n  use f ( )\n}\n"
        "load l {\n  warmup = 20s at 20/s\n}\n",
        "access a {\n  kube get on pods/log, deployments.apps[a-b, c], x\n  admin m: /admin/config\n}\n"
        "macro m(a, b) {\n  p99(a, phase: peak) <= 1.2 * baseline.p99(b)\n  use f()\n}\n"
        "load l {\n  warmup = 20s at 20/s\n}\n",
    ),
    "grouping-parens-after-keyword": (
        "task t {\n  fault f = g() {\n    onset = when ( a+b )*2 >= 3\n  }\n"
        "  gate g {\n    guard(a)<=1\n    (a) <= (1)\n  }\n}\n",
        "task t {\n  fault f = g() {\n    onset = when (a + b) * 2 >= 3\n  }\n"
        "  gate g {\n    guard (a) <= 1\n    (a) <= (1)\n  }\n}\n",
    ),
    "guard-conditions": (
        "task t {\n  gate g {\n    guard a+b<=1 or(c==0 and absent( d ))\n    guard(a)<=1 and b>2\n  }\n}\n",
        "task t {\n  gate g {\n    guard a + b <= 1 or (c == 0 and absent(d))\n    guard (a) <= 1 and b > 2\n  }\n}\n",
    ),
    "blank-lines": (
        "\n\n\ntask t {\n\n\n  x = 1\n\n\n\n  y = 2\n  \n\t\n}\n\n\n\nload l {\n  # c\n\n}\n\n\n",
        "task t {\n  x = 1\n\n  y = 2\n}\n\nload l {\n  # c\n}\n",
    ),
    "trailing-whitespace-and-final-newline": (
        "task t {   \n  x = 1\t \n}  ",
        "task t {\n  x = 1\n}\n",
    ),
    "crlf": (
        'task t {\r\n  x = """\r\n  a\r\n  """\r\n}\r\n',
        'task t {\n  x = """\n  a\n  """\n}\n',
    ),
    "alignment-normalised": (
        'task t {\n  title     = "x"\n  substrate = spine\n'
        '  gate g {\n    error_rate(send)     <= 1%   # a\n    goodput              >= 2   # b\n  }\n}\n',
        'task t {\n  title = "x"\n  substrate = spine\n'
        '  gate g {\n    error_rate(send) <= 1%  # a\n    goodput >= 2  # b\n  }\n}\n',
    ),
    "oracle-and-keywords": (
        "task t {\n  oracle   {   # golden\n    repair  p\n"
        "    wait   until healthy   within 60s\n    wait 5s\n    declare\n  }\n}\n",
        "task t {\n  oracle {  # golden\n    repair p\n"
        "    wait until healthy within 60s\n    wait 5s\n    declare\n  }\n}\n",
    ),
    "one-line-gate-kept-on-one-line": (
        "task t {\n  gate outcome=standard_outcome( route:send )# m\n    gate safety   =  m( a , b:c|d )\n"
        "  gate g {\n    use m()\n  }\n}\n",
        "task t {\n  gate outcome = standard_outcome(route: send)  # m\n  gate safety = m(a, b: c | d)\n"
        "  gate g {\n    use m()\n  }\n}\n",
    ),
    "blank-only": ("\n  \n\n", ""),
    "comment-only": ("\n\n   # just this   \n\n", "# just this\n"),
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden(name):
    messy, expected = GOLDEN[name]
    assert format_source(messy) == expected


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_expected_is_canonical_and_equivalent(name):
    messy, expected = GOLDEN[name]
    assert format_source(expected) == expected
    assert tree(expected) == tree(messy.replace("\r\n", "\n"))


def test_invalid_input_raises_the_parser_error_unchanged():
    text = "task t {\n  x = = 1\n  gate g {\n    a <=\n  }\n}\n"
    with pytest.raises(DiagnosticError) as expected:
        parse(SourceFile("bad.arena", text))
    with pytest.raises(DiagnosticError) as raised:
        format_source(text, name="bad.arena")
    assert raised.value.diagnostics == expected.value.diagnostics
    assert len(raised.value.diagnostics) == 2


def test_shape_ignores_spans_but_not_content():
    original = "task t {\n  x = 1\n}\n"
    respaced = "\n\ntask   t {\n      x=1\n}\n"
    assert parse(SourceFile("a", original)) != parse(SourceFile("a", respaced))  # spans differ
    assert tree(original) == tree(respaced)
    assert tree(original) != tree("task t {\n  x = 2\n}\n")
    assert tree(original) != tree("task t {\n  y = 1\n}\n")


def test_the_minimal_spec_is_canonical_in_both_gate_forms():
    """`fmt` keeps whichever gate form the author wrote: the 9-line golden spec with its
    one-line gates and no oracle block, and the same task with blocks, are both left alone."""
    minimal = (ROOT / "tests" / "golden" / "minimal" / "spec.arena").read_text(encoding="utf-8")
    assert len(minimal.splitlines()) == 9 and "gate safety = standard_safety(service: maintenance)\n" in minimal
    assert format_source(minimal) == minimal
    braced = minimal.replace("  gate safety = standard_safety(service: maintenance)\n",
                             "  gate safety {\n    use standard_safety(service: maintenance)\n  }\n")
    assert format_source(braced) == braced
    assert tree(braced) != tree(minimal)  # the syntax tree records the form written


def test_a_one_line_gate_that_is_not_a_macro_is_refused_like_the_parser_refuses_it():
    text = "task t {\n  gate outcome = error_rate(send) <= 1%\n}\n"
    with pytest.raises(DiagnosticError) as raised:
        format_source(text, name="bad.arena")
    assert [d.code for d in raised.value.diagnostics] == ["E0118"]


# ---- the corpus: every spec in the repository --------------------------------------


def test_corpus_is_not_empty():
    names = {path.name for path in CORPUS}
    assert {"profiles.arena", "t1.arena", "example.arena", "short-gates.arena"} <= names


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_corpus_idempotent_and_equivalent(path):
    text = path.read_text(encoding="utf-8")
    once = format_source(text)
    assert format_source(once) == once
    assert tree(once) == tree(text)
    assert once.count("#") == text.count("#")  # no comment lost


DIAGNOSTICS = sorted((ROOT / "tests" / "diagnostics").glob("*.arena"))


@pytest.mark.parametrize("path", DIAGNOSTICS, ids=lambda p: p.name)
def test_diagnostics_corpus_formats_or_fails_like_the_parser(path):
    """Specs with semantic errors still format; those with syntax errors are refused."""
    text = path.read_text(encoding="utf-8")
    try:
        parse(SourceFile(path.name, text))
    except DiagnosticError as error:
        with pytest.raises(DiagnosticError) as raised:
            format_source(text, name=path.name)
        assert raised.value.diagnostics == error.diagnostics
        return
    once = format_source(text)
    assert format_source(once) == once
    assert tree(once) == tree(text)


# ---- whitespace fuzzing ------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def lexer():
    """The grammar's own parser, for its token positions (the contextual lexer)."""
    from lark import Lark

    grammar = resources.files("arenac.grammar").joinpath("arena.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr")


def boundaries(text: str) -> tuple[list[int], list[int], list[int]]:
    """Where whitespace can be added without changing the canonical text: between
    tokens (blanks), at line ends (trailing blanks), and where a blank line is already
    dropped or kept (more blank lines): in a run of blank lines, after a line opening a
    block, before a `}`, at the start and the end of the file."""
    inline, line_ends, blank_lines = {0, len(text)}, {len(text)}, {0, len(text)}
    previous = None
    for token in lexer().parse_interactive(text).iter_parse():
        inline.update((token.start_pos, token.end_pos))
        if token.type == "_NL":
            line_ends.add(token.start_pos)
            blank_lines.update(token.start_pos + m.start() for m in re.finditer(r"\n(?=[ \t]*\n)", token.value))
            if previous == "LBRACE":
                blank_lines.add(token.start_pos)
        elif token.type == "RBRACE" and previous == "_NL":
            blank_lines.add(token.start_pos)
        previous = token.type
    return sorted(inline), sorted(line_ends), sorted(blank_lines)


BLANKS = st.text(alphabet=" \t", min_size=1, max_size=4)
BLANK_LINES = st.lists(st.text(alphabet=" \t", max_size=3), min_size=1, max_size=3).map(
    lambda lines: "".join(line + "\n" for line in lines)
)
SPECS = [path for path in CORPUS if "fmt_cases" in path.parts or path.name == "profiles.arena"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_whitespace_perturbation_formats_like_the_original(data):
    text = data.draw(st.sampled_from(SPECS)).read_text(encoding="utf-8")
    inline, line_ends, blank_lines = boundaries(text)
    edits = data.draw(st.lists(st.tuples(st.sampled_from(inline), BLANKS), max_size=25))
    edits += data.draw(st.lists(st.tuples(st.sampled_from(line_ends), BLANKS), max_size=10))
    edits += data.draw(st.lists(st.tuples(st.sampled_from(blank_lines), BLANK_LINES), max_size=10))
    perturbed = text
    for position, inserted in sorted(edits, key=lambda edit: -edit[0]):
        perturbed = perturbed[:position] + inserted + perturbed[position:]
    if data.draw(st.booleans()):
        perturbed = perturbed.replace("\n", "\r\n")
    assert format_source(perturbed) == format_source(text)
