#!/usr/bin/env python3
"""gen_jinja_ref.py - regenerate tests/data/jinja: the expectations of
tests/test_jinja.c for the Jinja engine (lib/jinja/jinja.h).

  .venv/bin/python scripts/gen_jinja_ref.py [--models DIR]

Every case is rendered by jinja2 exactly as transformers'
apply_chat_template renders a chat template: ImmutableSandboxedEnvironment
(trim_blocks, lstrip_blocks, loopcontrols), its tojson (json.dumps with
ensure_ascii=False), raise_exception, strftime_now (at a fixed time here)
and the {% generation %} block of its AssistantTracker. Writes:
  cases.txt   records (format below) for
              - every real template (../shared/data/templates/*.jinja and
                the ones embedded in the real models, copied to models/)
                and the templates written for these tests (own/)
                x every conversation x add_generation_prompt 0/1, with the
                bos/eos texts of the template's model family
              - small engine cases, one or a few features each
  models/*.jinja  the templates read from the model files (gguf-py)

A record is "@KIND k=v ... len=N\\n" + N bytes + "\\n". A case is three
records: "@case name=NAME src=SRC status=ok|error kind=raise|other",
"@ctx" (the context JSON) and "@out" (the expected text, or for an error
jinja2's message). SRC is shared:templates/FILE, local:models/FILE or
inline (then an "@tmpl" record with the text comes first). The first
record, "@now t=SECONDS", is the fixed strftime_now time (UTC).
"""
import argparse
import calendar
import json
import os
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_chat_ref import FIXED_NOW, SHARED, TOKENS, model_templates, record  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "jinja")


class Generation(Extension):
    """transformers' AssistantTracker without the tracking: the body of
    {% generation %} renders through a call block, as it is."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_support", []), [], [], body).set_lineno(lineno)

    def _support(self, caller):
        return caller()


def jinja_env():
    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: FIXED_NOW.strftime(fmt)
    return env


# ---- conversations ----------------------------------------------------------
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city, e.g. \"Paris\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7.5},
            },
            "required": ["city"],
        },
    },
}
TIME_TOOL = {"type": "function", "function": {"name": "get_time", "description": "The time now.",
                                              "parameters": {"type": "object", "properties": {}}}}


def m(role, content, **kw):
    d = {"role": role, "content": content}
    d.update(kw)
    return d


TRICKY = ("Quotes ' and \", back\\slash \\n, {{ x }} {% if true %}x{% endif %} {# c #}\n"
          "second line\ttab — 世界 你好 🌍🎉 Grüße\u00a0nbsp <|im_end|> </s> [INST]")
CONVS = [
    ("sys_user", [m("system", "You are a helpful assistant."), m("user", "Hello! Who are you?")]),
    ("user", [m("user", "What is the capital of France?")]),
    ("multi", [m("system", "You are terse."), m("user", "Hi"), m("assistant", "Hello."),
               m("user", "Name a colour.")]),
    ("multi_nosys", [m("user", "Hi there"), m("assistant", "Hello! How can I help?"),
                     m("user", "Tell me a joke."), m("assistant", "Why did the chicken cross the road?")]),
    ("tricky", [m("system", "  Spaces around.\n"), m("user", TRICKY), m("assistant", "  padded\n\n"),
                m("user", "\u00a0x\u00a0")]),
    ("empty", [m("user", ""), m("assistant", ""), m("user", "")]),
    ("sys_only", [m("system", "Only a system message.")]),
    ("out_of_order", [m("user", "A"), m("user", "B"), m("assistant", "C"), m("assistant", "D")]),
    ("assistant_first", [m("assistant", "I start."), m("user", "Ok.")]),
    ("tool_call", [m("system", "Use tools when needed."), m("user", "Weather in Paris?"),
                   m("assistant", "", tool_calls=[{"id": "call_1", "type": "function", "function": {
                       "name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}]),
                   m("tool", "{\"temp\": 21.5, \"sky\": \"clear\"}", tool_call_id="call_1", name="get_weather"),
                   m("assistant", "It is 21.5 °C and clear."), m("user", "Thanks")]),
    ("tool_call_str", [m("user", "Time?"),
                       m("assistant", None, tool_calls=[{"id": "c2", "type": "function", "function": {
                           "name": "get_time", "arguments": "{}"}}]),
                       m("tool", "12:00", tool_call_id="c2", name="get_time")]),
    ("parts", [m("system", [{"type": "text", "text": "System in parts."}]),
               m("user", [{"type": "text", "text": "Part one. "}, {"type": "text", "text": "Part two."}])]),
    ("long", [m("system", "Long chat.")] + [m("user" if i % 2 == 0 else "assistant",
                                              f"Turn {i}: " + "words " * (i % 5)) for i in range(20)]),
]
TOOL_CONVS = {"tool_call", "tool_call_str"}


def ctx_for(conv, msgs, ag, bos, eos, with_tools):
    c = {"messages": msgs, "add_generation_prompt": bool(ag), "bos_token": bos, "eos_token": eos}
    # as transformers passes them: tools and documents are None when not given
    c["tools"] = [WEATHER_TOOL, TIME_TOOL] if with_tools else None
    c["documents"] = None
    return c


# ---- engine cases: (name, template, context) ---------------------------------
MSGS = [m("system", "S"), m("user", "Hi 'you'"), m("assistant", "Yo")]
ENGINE = [
    # text and whitespace control
    ("text", "plain text\nwith lines\n", {}),
    ("trailing_two_newlines", "a\n\n", {}),
    ("crlf", "a\r\nb\rc\r\n", {}),
    ("trim_blocks", "{% if true %}\nyes\n{% endif %}\nend", {}),
    ("lstrip_blocks", "  {% if true %}\n  x\n  {% endif %}\n", {}),
    ("lstrip_not_var", "  {{ 'v' }}\n  {# c #}\n  t", {}),
    ("minus_both", "a  \n  {%- if true -%}  \n  b  \n  {%- endif -%}  \n  c", {}),
    ("minus_var", "a   {{- 'x' -}}   b", {}),
    ("plus_lstrip", "  {%+ if true %}x{% endif %}", {}),
    ("plus_trim", "{% if true +%}\nx{% endif %}", {}),
    ("comment", "a{# comment {{ x }} #}b\n{# line #}\nc", {}),
    ("comment_minus", "a  {#- c -#}  b", {}),
    ("raw", "{% raw %}{{ x }}{% if %}{% endraw %}!", {}),
    ("raw_minus", "a {%- raw -%} {{ y }} {%- endraw -%} b", {}),
    ("inline_tags", "{% for i in [1,2] %}{{ i }}{% endfor %}\n{% for i in [3] %}\n{{ i }}\n{% endfor %}", {}),
    # literals and printing
    ("print_types", "{{ 1 }} {{ 1.0 }} {{ 1.5e3 }} {{ 1e20 }} {{ 1e-5 }} {{ 0.1 + 0.2 }} {{ -0.0 }} {{ 2**62 }}", {}),
    ("print_consts", "{{ true }} {{ True }} {{ false }} {{ none }} {{ None }} [{{ undefined_x }}]", {}),
    ("print_list", "{{ [1, 'a', \"b'c\", 'd\"e', none, true, 1.5, [], {}] }}", {}),
    ("print_dict", "{{ {'a': 1, 'b': [2, 'x'], 3: none} }}", {}),
    ("print_tuple", "{{ (1, 'a') }} {{ (1,) }} {{ () }}", {}),
    ("print_ctx", "{{ messages }}|{{ messages[0] }}", {"messages": MSGS}),
    ("repr_escapes", "{{ ['\\n\\t\\\\', '\\x01', 'é世🌍', '\\u00a0'] }}", {}),
    ("string_escapes", "{{ 'a\\'b' }} {{ \"c\\\"d\" }} {{ 'x\\ny' }} {{ '\\u00e9\\x41' }} {{ 'a' 'b' }} {{ '\\d' }}", {}),
    ("ints_floats", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 6 / 2 }} {{ 2 ** 10 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }}", {}),
    ("pow", "{{ 2 ** 62 }} {{ (-2) ** 63 }} {{ (-3) ** 3 }} {{ 0 ** 0 }} {{ 0 ** 99999999999 }} {{ (-1) ** 99999999999 }} {{ (-1) ** 10**12 }} {{ 1 ** 10**15 }} {{ 2 ** -1 }} {{ 7 ** 22 }}", {}),
    ("arith_mixed", "{{ 1 + 2.5 }} {{ 3 - true }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ [1] + [2] }} {{ 'a' + 'b' }}", {}),
    ("precedence", "{{ 2 + 3 * 4 }} {{ (2 + 3) * 4 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 1 ~ 2 + 3 }} {{ not 1 == 2 }}", {}),
    ("concat", "{{ 'a' ~ 1 ~ none ~ true ~ 1.0 ~ undefined_x ~ [1] }}", {}),
    ("compare", "{{ 1 < 2 }} {{ 2 <= 1 }} {{ 'a' < 'b' }} {{ [1,2] < [1,3] }} {{ 1 == 1.0 }} {{ 1 == true }} {{ 'a' != 'a' }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}", {}),
    ("in_ops", "{{ 'a' in 'cat' }} {{ 2 in [1,2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'cat' }} {{ 3 not in [1] }}", {}),
    ("logic", "{{ 0 or 'x' }} {{ 1 and 'y' }} {{ '' and 1 }} {{ none or none }} {{ not '' }} {{ [] or {} }}", {}),
    ("cond_expr", "{{ 'a' if true else 'b' }} {{ 'a' if false else 'b' }} [{{ 'a' if false }}] {{ 1 if 0 else 2 if 0 else 3 }}", {}),
    ("attr_item", "{{ d.a }} {{ d['a'] }} {{ d.b.c }} {{ d['b']['c'] }} {{ l[0] }} {{ l[-1] }} {{ l.1 }} [{{ d.zz }}] [{{ l[9] }}]",
     {"d": {"a": 1, "b": {"c": "deep"}}, "l": [10, 20, 30]}),
    ("slices", "{{ l[1:] }} {{ l[:2] }} {{ l[::-1] }} {{ l[::2] }} {{ l[-2:] }} {{ s[1:3] }} {{ s[::-1] }} {{ l[5:] }} {{ l[1:-1] }}",
     {"l": [1, 2, 3, 4], "s": "héllo世"}),
    ("str_index", "{{ s[0] }} {{ s[-1] }} {{ s|length }}", {"s": "世界!"}),
    # statements
    ("if_elif", "{% for x in [1,2,3,4] %}{% if x == 1 %}one{% elif x == 2 %}two{% elif x == 3 %}three{% else %}other{% endif %},{% endfor %}", {}),
    ("for_loop_vars", "{% for x in ['a','b','c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}", {}),
    ("for_prev_next", "{% for x in [1,2,3] %}[{{ loop.previtem }}/{{ loop.nextitem }}]{% endfor %}", {}),
    ("for_cycle", "{% for x in range(5) %}{{ loop.cycle('a','b') }}{% endfor %}", {}),
    ("for_else", "{% for x in [] %}x{% else %}empty{% endfor %}{% for x in [1] %}x{% else %}empty{% endfor %}", {}),
    ("for_filter", "{% for x in range(10) if x is odd %}{{ x }}{{ loop.length }},{% endfor %}", {}),
    ("for_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for a, b in [[1,2],(3,4)] %}{{ a+b }}{% endfor %}",
     {"d": {"z": 1, "a": 2, "m": [3]}}),
    ("for_dict", "{% for k in d %}{{ k }}{% endfor %}{% for c in 'héy' %}<{{ c }}>{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("for_break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("for_nested", "{% for a in [1,2] %}{% for b in [3,4] %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %}", {}),
    ("for_scope", "{% set x = 1 %}{% for i in range(3) %}{{ x }}{% set x = i + 10 %}{{ x }}.{% endfor %}{{ x }}", {}),
    ("for_scope_iter", "{% for i in range(3) %}{% if i == 0 %}{% set y = 5 %}{% endif %}[{{ y }}]{% endfor %}", {}),
    ("set_simple", "{% set a = 1 %}{% set b, c = 2, 3 %}{% set t = 4, 5 %}{{ a }}{{ b }}{{ c }}{{ t }}", {}),
    ("set_if_scope", "{% if true %}{% set a = 'in' %}{% endif %}{{ a }}", {}),
    ("set_block", "{% set x %}Hello {{ name }}!{% endset %}[{{ x }}]{% set y | upper %}low{% endset %}{{ y }}", {"name": "W"}),
    ("namespace", "{% set ns = namespace(n=0, s='') %}{% for x in [1,2,3] %}{% set ns.n = ns.n + x %}{% set ns.s = ns.s ~ x %}{% endfor %}{{ ns.n }} {{ ns.s }}", {}),
    ("namespace_new_attr", "{% set ns = namespace() %}{% set ns.found = true %}{{ ns.found }} {{ ns.missing is defined }}", {}),
    ("macro", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} {{ greet(punct='.', name='C') }}", {}),
    ("macro_scope", "{% macro m() %}{{ y }}{% endmacro %}{% set y = 3 %}{{ m() }}", {}),
    ("macro_varargs", "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k=4) }}", {}),
    ("macro_caller", "{% macro box(t) %}[{{ t }}:{{ caller() }}]{% endmacro %}{% call box('x') %}inner {{ 1 + 1 }}{% endcall %}", {}),
    ("macro_caller_args", "{% macro each(l) %}{% for i in l %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(v) each([1,2]) %}<{{ v }}>{% endcall %}", {}),
    ("macro_recursive", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}", {}),
    ("filter_block", "{% filter upper %}hello {{ 'world' }}{% endfilter %}", {}),
    ("generation", "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}{{ m.content }}{% endgeneration %}{% else %}{{ m.content }}{% endif %}|{% endfor %}", {"messages": MSGS}),
    ("with", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]", {}),
    ("scope_0", '{{ x }}{% set x = 1 %}{{ x }}', {"x": "X"}),
    ("scope_1", '{% set y %}{{ x }}{% set x = 2 %}{% endset %}{{ y }}{{ x }}{% set x = 1 %}', {"x": "X"}),
    ("scope_2", '{% for i in [1] %}{{ x }}{% endfor %}{% set x = 1 %}', {"x": "X"}),
    ("scope_3", '{% for i in [1] %}{{ x }}{% set x = 2 %}{% endfor %}', {"x": "X"}),
    ("scope_4", '{% macro m() %}{{ x }}{% endmacro %}{{ m() }}{% set x = 1 %}{{ m() }}', {"x": "X"}),
    ("scope_5", '{% if false %}{% set x = 1 %}{% endif %}{% for i in [1] %}{{ x }}{% endfor %}', {"x": "X"}),
    ("scope_6", '{% for i in [1] %}{{ x }}{% endfor %}{{ x }}{% set x = 1 %}', {"x": "X"}),
    ("scope_7", '{% for i in [1] %}{% for j in [1] %}{{ x }}{% endfor %}{% set x = 2 %}{% endfor %}', {"x": "X"}),
    ("scope_8", '{% for i in [1] %}{{ x }}{% for j in [1] %}{{ x }}{% endfor %}{% set x = 2 %}{% endfor %}', {"x": "X"}),
    ("scope_9", '{% macro m() %}{{ x }}{% set x = 3 %}{{ x }}{% endmacro %}{{ m() }}{{ x }}', {"x": "X"}),
    ("scope_10", '{% set x = x ~ 1 %}{% for i in [1] %}{{ x }}{% endfor %}', {"x": "X"}),
    ("scope_11", '{% for i in [1] %}{{ x }}{% endfor %}{% if true %}{% set x = 1 %}{% else %}{% set x = 2 %}{% endif %}{{ x }}', {"x": "X"}),
    ("scope_12", '{% filter upper %}{% set x = 5 %}{{ x }}{% endfilter %}{{ x }}', {"x": "X"}),
    ("scope_13", '{% for i in [1] %}{% generation %}{% set x = 7 %}{{ x }}{% endgeneration %}{{ x }}{% endfor %}', {"x": "X"}),
    ("ws_raw_plus", "a {% raw %}\n b {%+ endraw %}\n c", {}),
    ("ws_raw_trim", "{% raw -%}\n  x  {%- endraw %}\ny", {}),
    ("ws_mixed", "  {%- for i in range(2) +%}\n  {{- i }}\n  {% if i %}\n\t{{ i -}}\n  {%+ endif -%}\n{% endfor %}\n", {}),
    # tests
    ("tests_defined", "{{ x is defined }} {{ y is defined }} {{ y is undefined }} {{ x.k is defined }} {{ x.z is defined }} {{ x is not defined }}", {"x": {"k": 1}}),
    ("tests_types", "{{ none is none }} {{ 's' is string }} {{ {} is mapping }} {{ [] is iterable }} {{ 's' is iterable }} {{ 1 is number }} {{ 1.5 is number }} {{ 1 is integer }} {{ 1.0 is float }} {{ true is boolean }} {{ 1 is boolean }} {{ true is true }} {{ 1 is true }} {{ false is false }} {{ [] is sequence }} {{ 1 is iterable }} {{ u is iterable }}", {}),
    ("tests_values", "{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 'a' is in 'cat' }} {{ 1 is equalto 1 }} {{ 1 is eq 2 }} {{ 1 is ne 2 }} {{ 2 is gt 1 }} {{ 2 is lessthan 1 }} {{ 1 is ge 1 }} {{ none is sameas none }}", {}),
    ("tests_float_parity", "{{ 2.0 is even }} {{ 3.0 is odd }} {{ 4.5 is divisibleby 1.5 }} {{ (1, 2) * 2 }} {{ u is callable }}", {}),
    ("tests_callable", "{% macro m() %}{% endmacro %}{{ m is callable }} {{ 1 is callable }} {{ range is callable }}", {}),
    # filters
    ("f_trim", "[{{ '  a b \\n'|trim }}] [{{ '--a--'|trim('-') }}] [{{ none|trim }}] [{{ '\\u00a0x\\u3000'|trim }}]", {}),
    ("f_length", "{{ 'héllo'|length }} {{ [1,2]|length }} {{ {'a':1}|count }} {{ u|length }}", {}),
    ("f_tojson", "{{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ l|tojson(indent=4) }}|{{ 'é\"\\n'|tojson }}|{{ 1.0|tojson }}|{{ none|tojson }}|{{ [1, [2, {}], []]|tojson(indent=1) }}|{{ d|tojson(sort_keys=true) }}|{{ d|tojson(separators=(',', ':')) }}|{{ 'é🌍'|tojson(ensure_ascii=true) }}",
     {"d": {"z": 1, "a": [1.5, True, None, "x"], "m": {"k": "v\t"}}, "l": []}),
    ("f_tojson_ctx", "{{ tools|tojson }}\n{{ tools[0]|tojson(indent=4) }}", {"tools": [WEATHER_TOOL, TIME_TOOL]}),
    ("f_items", "{% for k, v in d|items %}{{ k }}{{ v }}{% endfor %}{{ d|items|list }}", {"d": {"b": 1, "a": 2}}),
    ("f_join", "{{ [1,2,3]|join }} {{ ['a','b']|join(', ') }} {{ users|join(', ', attribute='name') }} {{ 'abc'|join('-') }}", {"users": [{"name": "x"}, {"name": "y"}]}),
    ("f_case", "{{ 'hello WORLD'|upper }} {{ 'HeLLo'|lower }} {{ 'hello WORLD'|capitalize }} {{ 'hello wORLD-foo bar(baz'|title }}", {}),
    ("f_replace", "{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'abc'|replace('', '-') }} {{ 'x\\ny'|replace('\\n', '\\\\n') }}", {}),
    ("f_default", "{{ u|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} {{ none|d('n') }} {{ 0|d(5, boolean=true) }} {{ 'v'|default('d') }}", {}),
    ("f_first_last", "{{ [1,2,3]|first }} {{ [1,2,3]|last }} {{ 'abc'|first }} {{ 'abc'|last }} [{{ []|first }}]", {}),
    ("f_list_string", "{{ 'ab'|list }} {{ {'a': 1}|list }} {{ 12|string ~ 'x' }} {{ [1]|string }}", {}),
    ("f_int_float", "{{ '42'|int }} {{ ' 7 '|int }} {{ '3.9'|int }} {{ 'x'|int }} {{ 'x'|int(5) }} {{ 4.7|int }} {{ '1.5'|float }} {{ 'y'|float }} {{ 3|float }} {{ '0x1f'|int(0, 16) }}", {}),
    ("f_abs_round", "{{ -3|abs }} {{ (-2.5)|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.567|round(2) }} {{ 2.1|round(0, 'ceil') }} {{ 2.9|round(method='floor') }} {{ 3|round }}", {}),
    ("f_escape", "{{ '<a href=\"x\">&\\'</a>'|e }} {{ '<b>'|escape }} {{ '<i>'|safe }}", {}),
    ("f_map", "{{ users|map(attribute='name')|list }} {{ ['a','b']|map('upper')|join }} {{ users|map(attribute='age', default=0)|list }} {{ [' x ']|map('trim')|list }}", {"users": [{"name": "x", "age": 3}, {"name": "y"}]}),
    ("f_select", "{{ range(10)|select('odd')|list }} {{ range(5)|reject('even')|list }} {{ [0, 1, '', 'a']|select|list }} {{ [1,2,3]|select('gt', 1)|list }}", {}),
    ("f_selectattr", "{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }} {{ msgs|rejectattr('role', 'eq', 'user')|list|length }} {{ msgs|selectattr('tool')|list }}",
     {"msgs": [m("user", "a"), m("assistant", "b", tool=True), m("user", "c")]}),
    ("f_unique", "{{ ['a', 'A', 'b', 'a']|unique|list }} {{ ['a', 'A']|unique(case_sensitive=true)|list }} {{ [1, 2, 1]|unique|list }}", {}),
    ("f_sort", "{{ [3,1,2]|sort }} {{ ['b','A','c']|sort }} {{ ['b','A','c']|sort(case_sensitive=true) }} {{ [3,1,2]|sort(reverse=true) }} {{ users|sort(attribute='age')|map(attribute='name')|list }}",
     {"users": [{"name": "x", "age": 3}, {"name": "y", "age": 1}]}),
    ("f_dictsort", "{{ d|dictsort }} {{ d|dictsort(by='value') }} {{ d|dictsort(reverse=true) }}", {"d": {"b": 2, "A": 3, "c": 1}}),
    ("f_reverse", "{{ 'abc'|reverse }} {{ [1,2,3]|reverse|list }}", {}),
    ("f_batch", "{{ range(5)|batch(2)|list }} {{ range(5)|batch(2, 'x')|list }}", {}),
    ("f_center", "[{{ 'ab'|center(7) }}] [{{ 'abc'|center(8) }}] [{{ 'abc'|center(2) }}]", {}),
    ("f_indent", "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(2, blank=true) }}|{{ 'a\\nb'|indent('> ') }}|{{ 'x\\n'|indent(1) }}", {}),
    ("f_wordcount_truncate", "{{ 'hello big world'|wordcount }} {{ 'hello big world foo bar'|truncate(12) }} {{ 'hello big world foo bar'|truncate(12, true) }} {{ 'short'|truncate(3, leeway=0) }} {{ 'short'|truncate(10) }}", {}),
    ("f_sum_min_max", "{{ [1,2,3]|sum }} {{ [1.5,2]|sum }} {{ users|sum(attribute='age') }} {{ [3,1,2]|min }} {{ [3,1,2]|max }} {{ ['b','A']|min }} {{ users|max(attribute='age') }}",
     {"users": [{"name": "x", "age": 3}, {"name": "y", "age": 1}]}),
    # methods
    ("m_strip", "[{{ '  a  '.strip() }}] [{{ 'xxaxx'.strip('x') }}] [{{ '  a  '.lstrip() }}] [{{ '  a  '.rstrip() }}] [{{ 'abcba'.rstrip('ab') }}]", {}),
    ("m_split", "{{ 'a b  c'.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ '  x y '.split() }} {{ 'a,b,c'.rsplit(',', 1) }} {{ 'a\\nb\\r\\nc'.splitlines() }}", {}),
    ("m_starts_ends", "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith('lo') }} {{ 'hello'.startswith(('x', 'h')) }} {{ 'hello'.endswith('x') }}", {}),
    ("m_case", "{{ 'ab'.upper() }} {{ 'AB'.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ \"they're bill's\".title() }}", {}),
    ("m_misc", "{{ 'a-b-c'.replace('-', '+') }} {{ 'hello'.find('l') }} {{ 'hello'.find('z') }} {{ 'hello'.count('l') }} {{ ', '.join(['a','b']) }} {{ 'abc'.rfind('c') }} {{ '12'.isdigit() }} {{ ' '.isspace() }}", {}),
    ("m_dict", "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 'dflt') }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }}", {"d": {"a": 1, "b": 2}}),
    ("m_dict_key_named_items", "{{ d['items'] }} {{ d.items()|length }}", {"d": {"items": "key"}}),
    # x.name is the attribute first (a dict's methods), then the key; x['name'] the key first
    ("attr_method_first", "{{ spec.items is defined }} {{ spec.items is callable }} {{ spec['items'] is callable }} {{ spec.get('items') }} {{ spec.type }} {{ spec['type'] }}",
     {"spec": {"type": "array", "items": {"type": "string"}}}),
    ("attr_schema_items", "{% for name, p in params.properties.items() %}{{ name }}: {{ p.type }}{% if p.items %} of [{{ p.items.type }}]{% endif %}{% if p['items'] %} items={{ p['items'].type }}{% endif %};{% endfor %}",
     {"params": {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}, "n": {"type": "integer"}}}}),
    ("item_then_method", "{{ d['keys'] is callable }} {{ d['values']()|list }} {{ d.keys()|list }} {{ d.copy is callable }} [{{ d.pop }}] {{ d.pop is defined }} {{ d.update is defined }}",
     {"d": {"a": 1, "pop": 2}}),
    ("attr_str_list_methods", "{{ s.upper is callable }} {{ s['upper'] is callable }} {{ s.nosuch is defined }} {{ l.index is callable }} {{ l.append is defined }} {{ (l|map('string')).index is defined }}",
     {"s": "x", "l": [1]}),
    ("err_unsafe_method_attr", "{{ d.pop() }}", {"d": {"a": 1}}),
    ("err_method_not_iterable", "{{ d.items|list }}", {"d": {"a": 1}}),
    # globals
    ("g_range", "{{ range(3)|list }} {{ range(1, 4)|list }} {{ range(10, 0, -3)|list }} {{ range(0)|list }}", {}),
    ("g_dict", "{{ dict(a=1, b='x') }} {{ namespace(a=1).a }}", {}),
    ("g_strftime", "{{ strftime_now('%Y-%m-%d %H:%M:%S') }} {{ strftime_now('%d %B %Y') }} {{ strftime_now('%a %b %j %p %I %y') }} {{ strftime_now('%-d %-m %e %A %%') }}", {}),
    ("g_raise", "{% if messages|length > 1 %}{{ raise_exception('Too many messages: ' ~ messages|length) }}{% endif %}ok", {"messages": MSGS}),
    ("g_raise_not", "{% if messages|length > 5 %}{{ raise_exception('no') }}{% endif %}ok", {"messages": MSGS}),
    # context values
    ("ctx_types", "{{ i }} {{ f }} {{ f2 }} {{ b }} {{ n }} {{ s }} {{ i is integer }} {{ f2 is float }}", {"i": 3, "f": 2.0, "f2": 0.1, "b": False, "n": None, "s": "x"}),
    ("ctx_unicode", "{{ s }}|{{ s|length }}|{{ s|upper }}|{{ s|lower }}|{{ s|title }}|{{ s[::-1] }}|{{ s|tojson }}", {"s": "Aé世🌍\u00a0 çaÀ ĳœŁ ΑΛΦΑ Привет ÿ"}),
    ("ctx_key_order", "{{ d|tojson }} {% for k in d %}{{ k }}{% endfor %}", {"d": {"zeta": 1, "alpha": 2, "mid": 3}}),
    # errors (jinja2 raises; the engine must too)
    ("err_undefined_attr", "{{ x.y.z }}", {"x": {}}),
    ("err_undefined_call", "{{ nothing() }}", {}),
    ("err_type_add", "{{ 1 + 'a' }}", {}),
    ("err_div_zero", "{{ 1 / 0 }}", {}),
    ("err_append", "{% set l = [1] %}{% set _ = l.append(2) %}{{ l }}", {}),
    ("err_range", "{% for i in range(200000) %}{% endfor %}", {}),
    ("err_unknown_filter", "{{ 1|nosuchfilter }}", {}),
    ("err_unknown_tag", "{% nosuchtag %}", {}),
    ("err_unclosed_if", "{% if true %}x", {}),
    ("err_unclosed_for", "{% for x in y %}", {}),
    ("err_unclosed_var", "{{ x ", {}),
    ("err_unclosed_string", "{{ 'abc }}", {}),
    ("err_bad_expr", "{{ 1 + }}", {}),
    ("err_stray_endif", "x{% endif %}", {}),
    ("err_ns_attr", "{% set d = {} %}{% set d.x = 1 %}", {}),
    ("err_items_not_mapping", "{% for x in 1|items %}{% endfor %}", {}),
    ("markup_add", "{{ '<a>'|safe + '<b>' }} {{ '<c>' + '<d>'|safe }} {{ ('<e>'|safe + '&')|length }} {{ '<f>'|safe ~ '<g>' }} {{ ('x'|safe + '<')|upper }} {{ '<i>'|e|e }}", {}),
    ("generators", "{{ [1,2]|map('string')|join(',') }} {{ [1,2]|select|list|length }} {{ ([]|select) is iterable }} {{ none|selectattr('x')|list }} {{ d.items()|list }} {% if []|map('upper') %}gen-true{% endif %}", {"d": {"a": 1}}),
    ("err_generator_len", "{{ [1,2]|map('string')|length }}", {}),
    ("err_generator_json", "{{ [1,2]|select|tojson }}", {}),
    ("err_tojson_undefined", "{{ u|tojson }}", {}),
    ("err_not_iterable", "{% for x in 5 %}{% endfor %}", {}),
    ("err_unpack", "{% for a, b in [[1, 2, 3]] %}{% endfor %}", {}),
    ("err_indent_int", "{{ 5|indent }}", {}),
    ("err_raise_in_macro", "{% macro m() %}{{ raise_exception('from macro') }}{% endmacro %}{{ m() }}", {}),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=os.path.join(ROOT, "models"))
    a = ap.parse_args()
    os.makedirs(os.path.join(DATA, "models"), exist_ok=True)
    env = jinja_env()
    counts = {"ok": 0, "error": 0}

    def case(f, name, src, text, ctx):
        try:
            out = env.from_string(text).render(**ctx)
            status, kind = "ok", "other"
        except jinja2.exceptions.TemplateSyntaxError as ex:
            out, status, kind = str(ex), "error", "other"
        except jinja2.exceptions.TemplateError as ex:
            # raise_exception raises the base class itself
            exact = type(ex) is jinja2.exceptions.TemplateError
            out, status, kind = str(ex), "error", "raise" if exact else "other"
        except Exception as ex:  # TypeError, ZeroDivisionError, OverflowError, ...
            out, status, kind = f"{type(ex).__name__}: {ex}", "error", "other"
        counts[status] += 1
        if src == "inline":
            record(f, f"tmpl name={name}", text)
        record(f, f"case name={name} src={src} status={status} kind={kind}", "")
        record(f, "ctx", json.dumps(ctx, ensure_ascii=False))
        record(f, "out", out)

    temps = []
    for fn in sorted(os.listdir(os.path.join(SHARED, "templates"))):
        if fn.endswith(".jinja"):
            text = open(os.path.join(SHARED, "templates", fn), encoding="utf-8").read()
            bos, eos, _ = TOKENS[fn]
            temps.append(("shared:templates/" + fn, fn, text, bos, eos))
    for name, text, bos, eos, _, _ in model_templates(a.models):
        with open(os.path.join(DATA, "models", name), "w", encoding="utf-8", newline="") as f:
            f.write(text)
        temps.append(("local:models/" + name, name, text, bos, eos))
    # templates written for these tests (tests/data/jinja/own): the
    # constructs of recent templates that the shared ones lack
    for fn in sorted(os.listdir(os.path.join(DATA, "own"))):
        text = open(os.path.join(DATA, "own", fn), encoding="utf-8").read()
        temps.append(("local:own/" + fn, fn, text, "<s>", "</s>"))

    with open(os.path.join(DATA, "cases.txt"), "wb") as f:
        record(f, f"now t={calendar.timegm(FIXED_NOW.timetuple())}", "")
        for src, fn, text, bos, eos in temps:
            # tool-use templates get tools in every conversation, the
            # others in the conversations with tool calls
            always = "tool_use" in fn or "functionary" in fn or "firefunction" in fn
            if "local:own/" in src:
                always = True
            for conv, msgs in CONVS:
                for ag in (0, 1):
                    ctx = ctx_for(conv, msgs, ag, bos, eos, always or conv in TOOL_CONVS)
                    if "local:own/" in src and conv not in TOOL_CONVS and conv != "multi":
                        ctx["tools"] = None
                    case(f, f"{fn.rsplit('.', 1)[0]}/{conv}/{ag}", src, text, ctx)
            # the template without tools/documents in the context at all
            ctx = ctx_for("user", CONVS[1][1], 1, bos, eos, False)
            del ctx["tools"], ctx["documents"]
            case(f, f"{fn.rsplit('.', 1)[0]}/no_tools_key/1", src, text, ctx)
        for name, text, ctx in ENGINE:
            case(f, "engine/" + name, "inline", text, ctx)
    print(f"jinja2 {jinja2.__version__}: {counts['ok']} renderings, {counts['error']} errors, "
          f"{len(temps)} real templates, {len(ENGINE)} engine cases")


if __name__ == "__main__":
    main()
