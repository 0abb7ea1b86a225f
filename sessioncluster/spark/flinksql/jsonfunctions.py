"""Flink SQL's JSON functions: their grammar (one sqlglot node, :class:`FlinkJson`), their
Flink SQL text, and their Spark SQL form on Spark's VARIANT functions.

``JSON_VALUE``/``JSON_EXISTS``/``JSON_QUERY`` read the input with ``try_parse_json`` (NULL for
invalid JSON) and the path with ``variant_get`` (SQL NULL where the path is missing, a variant
null for a JSON null). A path without a mode is ``strict`` (Calcite's default, as Flink's
answers show): a missing path is an error there and "empty" only in ``lax`` mode.
``JSON_STRING``/``JSON_OBJECT``/``JSON_ARRAY`` write a value's JSON with ``to_json`` of a
one-field struct (works for scalars, arrays, maps and rows alike) and build the text with
``concat``/``concat_ws``.

The aggregates ``JSON_OBJECTAGG``/``JSON_ARRAYAGG`` (:class:`FlinkJsonObjectAgg`,
:class:`FlinkJsonArrayAgg`) collect each row's JSON text with ``collect_list`` and join it: an
object's entries sorted by key, as Flink writes them, an array's in the order the rows come.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Sequence

from sqlglot import exp
from sqlglot.tokens import TokenType

from ...api.table.typeparser import spark_type
from .model import FlinkSqlError


class FlinkJson(exp.Expression):
    """A call of a Flink JSON function (``function``: VALUE, EXISTS, QUERY, STRING, OBJECT,
    ARRAY). ``empty``/``error``: the ON EMPTY/ON ERROR behaviour word (``DEFAULT``'s value in
    ``empty_default``/``error_default``); ``expressions``: OBJECT's keys and values
    alternately, ARRAY's values."""

    arg_types = {"function": True, "this": False, "path": False, "returning": False,
                 "empty": False, "empty_default": False, "error": False, "error_default": False,
                 "wrapper": False, "on_null": False, "expressions": False}


class FlinkJsonObjectAgg(exp.Expression, exp.AggFunc):
    """``JSON_OBJECTAGG([KEY] this VALUE expression [NULL|ABSENT ON NULL])``."""

    arg_types = {"this": True, "expression": True, "on_null": False}
    _sql_names = ["JSON_OBJECTAGG"]


class FlinkJsonArrayAgg(exp.Expression, exp.AggFunc):
    """``JSON_ARRAYAGG(this [ORDER BY ...] [NULL|ABSENT ON NULL])``."""

    arg_types = {"this": True, "order": False, "on_null": False}
    _sql_names = ["JSON_ARRAYAGG"]


_BEHAVIOURS = ("NULL", "ERROR", "DEFAULT", "TRUE", "FALSE", "UNKNOWN", "EMPTY ARRAY",
               "EMPTY OBJECT")


def _parse_behaviours(parser: Any, node: dict[str, Any], allowed: tuple[str, ...]) -> None:
    """``{NULL|ERROR|DEFAULT e|...} ON {EMPTY|ERROR}``, at most one of each."""
    while True:
        word = next((w for w in allowed if parser._match_text_seq(*w.split())), None)
        if word is None:
            return
        default = parser._parse_disjunction() if word == "DEFAULT" else None
        if parser._match_text_seq("ON", "EMPTY"):
            which = "empty"
        elif parser._match_text_seq("ON", "ERROR"):
            which = "error"
        else:
            parser.raise_error(f"Expecting ON EMPTY or ON ERROR after {word}")
            return
        node[which] = word
        node[f"{which}_default"] = default


def _input_and_path(parser: Any) -> dict[str, Any]:
    this = parser._parse_disjunction()
    if not parser._match(TokenType.COMMA):
        parser.raise_error("Expecting a JSON path after the input")
    return {"this": this, "path": parser._parse_disjunction()}


def _parse_value(parser: Any) -> exp.Expr:
    node = _input_and_path(parser)
    node["function"] = "VALUE"
    if parser._match_text_seq("RETURNING"):
        node["returning"] = parser._parse_flink_type()
    _parse_behaviours(parser, node, ("NULL", "ERROR", "DEFAULT"))
    return parser.expression(FlinkJson(**node))


def _parse_exists(parser: Any) -> exp.Expr:
    node = _input_and_path(parser)
    node["function"] = "EXISTS"
    _parse_behaviours(parser, node, ("TRUE", "FALSE", "UNKNOWN", "ERROR"))
    return parser.expression(FlinkJson(**node))


def _parse_query(parser: Any) -> exp.Expr:
    node = _input_and_path(parser)
    node["function"] = "QUERY"
    if parser._match_text_seq("WITHOUT"):
        node["wrapper"] = "WITHOUT"
    elif parser._match_text_seq("WITH"):
        kind = next((k for k in ("CONDITIONAL", "UNCONDITIONAL") if parser._match_text_seq(k)),
                    "UNCONDITIONAL")
        node["wrapper"] = f"WITH {kind}"
    if node.get("wrapper"):
        parser._match_text_seq("ARRAY")
        if not parser._match_text_seq("WRAPPER"):
            parser.raise_error("Expecting WRAPPER")
    _parse_behaviours(parser, node, ("NULL", "ERROR", "EMPTY ARRAY", "EMPTY OBJECT"))
    return parser.expression(FlinkJson(**node))


def _parse_on_null(parser: Any) -> str | None:
    for word in ("NULL", "ABSENT"):
        if parser._match_text_seq(word, "ON", "NULL"):
            return word
    return None


def _object_entry(parser: Any) -> list[exp.Expr]:
    parser._match_text_seq("KEY")
    key = parser._parse_bitwise()
    if not parser._match_text_seq("VALUE"):
        parser.raise_error("Expecting VALUE after a JSON_OBJECT key")
    return [key, parser._parse_disjunction()]


def _constructor_parser(function: str, entry: Callable[[Any], list[exp.Expr]],
                        default_on_null: str) -> Callable[[Any], exp.Expr]:
    """The parser of ``JSON_OBJECT``/``JSON_ARRAY``: entries, then ``{NULL|ABSENT} ON NULL``."""
    def parse(parser: Any) -> exp.Expr:
        items: list[exp.Expr] = []
        on_null = _parse_on_null(parser)
        while on_null is None and parser._curr and parser._curr.token_type != TokenType.R_PAREN:
            items.extend(entry(parser))
            on_null = _parse_on_null(parser)
            if on_null is None and not parser._match(TokenType.COMMA):
                break
        return parser.expression(FlinkJson(function=function, expressions=items,
                                           on_null=on_null or default_on_null))

    return parse


def _parse_object_agg(parser: Any) -> exp.Expr:
    key, value = _object_entry(parser)
    return parser.expression(FlinkJsonObjectAgg(this=key, expression=value,
                                                on_null=_parse_on_null(parser) or "NULL"))


def _parse_array_agg(parser: Any) -> exp.Expr:
    item = parser._parse_disjunction()
    # Flink 2.3 accepts ORDER BY here and keeps the rows' order all the same (its answer to
    # JSON_ARRAYAGG(k ORDER BY k) of 'b', 'a', 'c' is ["b","a","c"]): kept for the text only
    order = parser._parse_order()
    return parser.expression(FlinkJsonArrayAgg(this=item, order=order,
                                               on_null=_parse_on_null(parser) or "ABSENT"))


def _parse_string(parser: Any) -> exp.Expr:
    return parser.expression(FlinkJson(function="STRING", this=parser._parse_disjunction()))


#: the FUNCTION_PARSERS of the Flink dialect
JSON_FUNCTION_PARSERS = {
    "JSON_VALUE": _parse_value, "JSON_EXISTS": _parse_exists, "JSON_QUERY": _parse_query,
    "JSON_STRING": _parse_string,
    "JSON_OBJECT": _constructor_parser("OBJECT", _object_entry, "NULL"),
    "JSON_ARRAY": _constructor_parser("ARRAY", lambda parser: [parser._parse_disjunction()],
                                      "ABSENT"),
    "JSON_OBJECTAGG": _parse_object_agg,
    "JSON_ARRAYAGG": _parse_array_agg,
}


def json_object_agg_sql(gen: Any, node: FlinkJsonObjectAgg) -> str:
    """``node`` as Flink SQL."""
    return (f"JSON_OBJECTAGG(KEY {gen.sql(node, 'this')} VALUE {gen.sql(node, 'expression')} "
            f"{node.args['on_null']} ON NULL)")


def json_array_agg_sql(gen: Any, node: FlinkJsonArrayAgg) -> str:
    """``node`` as Flink SQL."""
    order = gen.sql(node, "order")
    return f"JSON_ARRAYAGG({gen.sql(node, 'this')}{order} {node.args['on_null']} ON NULL)"


def json_sql(gen: Any, node: FlinkJson) -> str:
    """``node`` as Flink SQL."""
    function = node.args["function"]
    if function in ("OBJECT", "ARRAY"):
        items = [gen.sql(i) for i in node.expressions]
        if function == "OBJECT":
            items = [f"KEY {k} VALUE {v}" for k, v in zip(items[::2], items[1::2], strict=True)]
        on_null = f"{node.args['on_null']} ON NULL"
        return f"JSON_{function}({' '.join([', '.join(items), on_null]).strip()})"
    if function == "STRING":
        return f"JSON_STRING({gen.sql(node, 'this')})"
    parts = [f"{gen.sql(node, 'this')}, {gen.sql(node, 'path')}"]
    if node.args.get("returning") is not None:
        parts.append(f"RETURNING {node.args['returning'].this}")
    if node.args.get("wrapper"):
        parts.append(f"{node.args['wrapper']} ARRAY WRAPPER")
    for which in ("empty", "error"):
        word = node.args.get(which)
        if word:
            default = f" {gen.sql(node, f'{which}_default')}" if word == "DEFAULT" else ""
            parts.append(f"{word}{default} ON {which.upper()}")
    return f"JSON_{function}({' '.join(parts)})"


# -- Spark SQL ---------------------------------------------------------------------------------
Rewrite = Callable[[exp.Expression], exp.Expression]
_PATH = re.compile(r"\$(\.[^.\[\]\s]+|\[\d+\]|\['[^']*'\]|\[\"[^\"]*\"\])*")
#: RETURNING types of JSON_VALUE (Flink rejects others) and the JSON types each accepts
_RETURNING = {"STRING": None, "VARCHAR": None, "CHAR": None, "BOOLEAN": ("BOOLEAN",),
              "INT": ("BIGINT",), "INTEGER": ("BIGINT",), "DOUBLE": ("DECIMAL", "DOUBLE")}


def _f(name: str, *args: exp.Expr) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=list(args))


def _s(text: str) -> exp.Expression:
    return exp.Literal.string(text)


def _fail(message: str) -> exp.Expression:
    return _f("raise_error", _s(message))


def _case(whens: Sequence[tuple[exp.Expr, exp.Expr]], default: exp.Expr) -> exp.Expression:
    return exp.Case(ifs=[exp.If(this=c, true=v) for c, v in whens], default=default)


def _path(node: FlinkJson) -> tuple[str, bool]:
    """The path without its mode, and whether the mode is strict (the default)."""
    path = node.args["path"]
    if not (isinstance(path, exp.Literal) and path.is_string):
        raise FlinkSqlError(f"The path of JSON_{node.args['function']} must be a string literal")
    text = path.this.strip()
    mode, _, rest = text.partition(" ")
    strict = mode.lower() != "lax"
    if mode.lower() in ("lax", "strict"):
        text = rest.strip()
    if not _PATH.fullmatch(text):
        raise FlinkSqlError(f"JSON path '{path.this}' is not supported by sessioncluster "
                            "(supported: $, $.a.b, $.a[0], $['a'])")
    return text, strict


def _schema_is(value: exp.Expression, *prefixes: str) -> exp.Expression:
    schema = _f("schema_of_variant", value)
    return exp.Paren(this=exp.or_(*(exp.Like(this=schema.copy(), expression=_s(f"{p}%"))
                                    for p in prefixes)))


def to_spark(node: FlinkJson, rewrite: Rewrite) -> exp.Expression:
    """The Spark SQL expression of a JSON function call; ``rewrite`` translates its
    arguments (sqlglot's transform does not visit a replaced node's children)."""
    function = node.args["function"]
    if function in ("STRING", "OBJECT", "ARRAY"):
        return _json_text(node, rewrite)
    x = rewrite(node.this.copy())
    path, strict = _path(node)
    v = _f("try_parse_json", x.copy())
    got = _f("variant_get", v, _s(path))
    null = exp.Null()
    if function == "EXISTS":
        on_error = _behaviour(node, "error", "FALSE", None, rewrite)
        present = exp.and_(exp.Not(this=exp.Is(this=got.copy(), expression=null.copy())),
                           exp.Not(this=_f("is_variant_null", got.copy())))
        missing = [(exp.Is(this=got.copy(), expression=null.copy()), on_error)] if strict else []
        return _case([(exp.Is(this=x, expression=null.copy()), null.copy()),
                      (exp.Is(this=v.copy(), expression=null.copy()), on_error.copy()),
                      *missing], present)
    if function == "VALUE":
        return _json_value(node, x, v, got, strict, path, rewrite)
    return _json_query(node, x, v, got, strict)


def _behaviour(node: FlinkJson, which: str, default: str, to: exp.DataType | None,
               rewrite: Rewrite) -> exp.Expression:
    word = node.args.get(which) or default
    function = f"JSON_{node.args['function']}"
    if word == "ERROR":
        reason = "the path is missing" if which == "empty" else "the input or path is invalid"
        return _fail(f"{function}: {reason} (ERROR ON {which.upper()})")
    if word == "DEFAULT":
        value = rewrite(node.args[f"{which}_default"].copy())
        return exp.Cast(this=value, to=to) if to is not None else value
    return {"NULL": exp.Null(), "UNKNOWN": exp.Null(), "TRUE": exp.true(), "FALSE": exp.false(),
            "EMPTY ARRAY": _s("[]"), "EMPTY OBJECT": _s("{}")}[word]


def _json_value(node: FlinkJson, x: exp.Expression, v: exp.Expression, got: exp.Expression,
                strict: bool, path: str, rewrite: Rewrite) -> exp.Expression:
    returning = node.args.get("returning")
    type_text = returning.this if returning is not None else "STRING"
    base = type_text.split("(")[0].strip().upper()
    if base not in _RETURNING:
        raise FlinkSqlError(f"Unsupported type '{type_text}' for RETURNING in JSON_VALUE().")
    spark = spark_type(type_text)
    to = exp.DataType.build(spark, dialect="spark")
    on_error = _behaviour(node, "error", "NULL", to, rewrite)
    on_empty = on_error if strict else _behaviour(node, "empty", "NULL", to, rewrite)
    null = exp.Null()
    # a JSON null or a non-scalar is "empty" in lax mode, an error in strict mode (whose
    # on_empty is its on_error), as Flink answers
    whens = [(exp.Is(this=x, expression=null.copy()), null.copy()),
             (exp.Is(this=v.copy(), expression=null.copy()), on_error),
             (exp.or_(exp.Is(this=got.copy(), expression=null.copy()),
                      _f("is_variant_null", got.copy()),
                      _schema_is(got, "OBJECT", "ARRAY")), on_empty)]
    accepted = _RETURNING[base]
    if accepted is not None:  # Flink fails the job on a JSON value of another type
        whens.append((exp.Not(this=_schema_is(got, *accepted)),
                      _fail(f"JSON_VALUE: the value at '{path}' is not of type {type_text}")))
    return _case(whens, _f("variant_get", v.copy(), _s(path), _s(spark)))


def _json_query(node: FlinkJson, x: exp.Expression, v: exp.Expression, got: exp.Expression,
                strict: bool) -> exp.Expression:
    on_error = _behaviour(node, "error", "NULL", None, lambda e: e)
    on_empty = on_error if strict else _behaviour(node, "empty", "NULL", None, lambda e: e)
    wrapper = node.args.get("wrapper") or "WITHOUT"
    null = exp.Null()
    text = _f("to_json", got.copy())
    structured = _schema_is(got, "OBJECT", "ARRAY")
    whens = [(exp.Is(this=x, expression=null.copy()), null.copy()),
             (exp.Is(this=v.copy(), expression=null.copy()), on_error),
             (exp.or_(exp.Is(this=got.copy(), expression=null.copy()),
                      _f("is_variant_null", got.copy())), on_empty)]
    wrapped = _f("concat", _s("["), text.copy(), _s("]"))
    if wrapper == "WITHOUT":
        whens.append((exp.Not(this=structured), on_error.copy()))
        return _case(whens, text)
    if wrapper == "WITH CONDITIONAL":
        return _case(whens, _case([(_schema_is(got, "ARRAY"), text)], wrapped))
    return _case(whens, wrapped)


def _escaped_key(key: exp.Expression) -> str:
    if not (isinstance(key, exp.Literal) and key.is_string):
        raise FlinkSqlError("The keys of JSON_OBJECT must be string literals")
    return json.dumps(key.this, ensure_ascii=False)


def _json_text(node: FlinkJson, rewrite: Rewrite) -> exp.Expression:
    """``JSON_STRING``'s, ``JSON_OBJECT``'s or ``JSON_ARRAY``'s text."""
    function = node.args["function"]
    if function == "STRING":
        return _value_json(node.this, rewrite)
    items = node.expressions
    absent = node.args.get("on_null") == "ABSENT"
    values = items[1::2] if function == "OBJECT" else items
    keys = [_escaped_key(k) for k in items[::2]] if function == "OBJECT" else [""] * len(values)
    if function == "OBJECT":  # Flink writes an object's keys sorted (PyFlink 2.3)
        pairs = sorted(zip(keys, values, strict=True), key=lambda kv: json.loads(kv[0]))
        keys, values = [k for k, _ in pairs], [v for _, v in pairs]
    open_, close = ("{", "}") if function == "OBJECT" else ("[", "]")
    parts = []
    for key, value in zip(keys, values, strict=True):
        prefix = f"{key}:" if key else ""
        text = _value_json(value, rewrite)
        if not absent:  # else concat_ws skips the NULL (a concat with a NULL value gives one)
            text = _f("coalesce", text, _s("null"))
        parts.append(_f("concat", _s(prefix), text) if prefix else text)
    return _f("concat", _s(open_), _f("concat_ws", _s(","), *parts), _s(close)) if parts \
        else _s(open_ + close)


def _value_json(value: exp.Expression, rewrite: Rewrite) -> exp.Expression:
    """A value's JSON text (NULL for NULL); a JSON_OBJECT/JSON_ARRAY call is JSON already."""
    if isinstance(value, FlinkJson) and value.args["function"] in ("OBJECT", "ARRAY"):
        return _json_text(value, rewrite)
    if is_raw_json(value):  # JSON(text): the text's JSON as it is (NULL for NULL or '')
        text = rewrite(value.expressions[0].copy())
        empty = exp.or_(exp.Is(this=text.copy(), expression=exp.Null()),
                        exp.EQ(this=text.copy(), expression=_s("")))
        return _case([(empty, exp.Null())], _f("to_json", _f("parse_json", text)))
    field = _f("named_struct", _s("v"), rewrite(value.copy()))
    text = _f("to_json", field, _f("map", _s("ignoreNullFields"), _s("false")))
    whole = exp.Paren(this=text)
    inner = _f("substring", whole, exp.Literal.number(6),
               exp.Sub(this=_f("length", whole.copy()), expression=exp.Literal.number(6)))
    return _case([(exp.Is(this=rewrite(value.copy()), expression=exp.Null()), exp.Null())],
                 inner)


def is_raw_json(node: exp.Expr) -> bool:
    """Whether ``node`` is a call of ``JSON(text)`` (valid only as a JSON_OBJECT value or a
    JSON_ARRAY element)."""
    return isinstance(node, exp.Anonymous) and node.name.upper() == "JSON" \
        and len(node.expressions) == 1


#: Flink's refusal of JSON() elsewhere
RAW_JSON_PLACE = ("The JSON() function is currently only supported inside JSON_ARRAY() or as "
                  "the VALUE param of JSON_OBJECT(). Example: JSON_OBJECT('a', JSON('{\"key\": "
                  "\"value\"}')) or JSON_ARRAY(JSON('{\"key\": \"value\"}')).")


def is_json(node: exp.Is, rewrite: Rewrite) -> exp.Expression:
    """``x IS JSON [VALUE|SCALAR|ARRAY|OBJECT]``: FALSE for NULL, as Flink's."""
    x = rewrite(node.this.copy())
    kind = (node.expression.this or "VALUE").upper()
    v = _f("try_parse_json", x)
    valid = exp.Not(this=exp.Is(this=v, expression=exp.Null()))
    if kind == "VALUE":
        return _f("coalesce", valid, exp.false())
    structured = _schema_is(v.copy(), "OBJECT", "ARRAY")
    check = {"OBJECT": _schema_is(v.copy(), "OBJECT"), "ARRAY": _schema_is(v.copy(), "ARRAY"),
             "SCALAR": exp.Not(this=structured)}[kind]
    return _f("coalesce", exp.and_(valid, check), exp.false())


# -- the aggregates -----------------------------------------------------------------------------
def _lambda(body: exp.Expr, *names: str) -> exp.Expression:
    return exp.Lambda(this=body, expressions=[exp.to_identifier(n) for n in names])


def _field(name: str, field: str) -> exp.Expression:
    return exp.Dot(this=exp.column(name), expression=exp.to_identifier(field))


def aggregate_to_spark(node: FlinkJsonObjectAgg | FlinkJsonArrayAgg,
                       rewrite: Rewrite) -> exp.Expression:
    """The Spark SQL expression of ``JSON_OBJECTAGG``/``JSON_ARRAYAGG``."""
    if isinstance(node.parent, exp.Window):
        raise FlinkSqlError(f"{node.sql_name()} is not supported in OVER windows (Flink docs: "
                            "System Functions / JSON Functions)")
    absent = node.args.get("on_null") == "ABSENT"
    if isinstance(node, FlinkJsonArrayAgg):
        item = _value_json(node.this, rewrite)
        # collect_list skips NULLs: ABSENT ON NULL as it is
        texts = _f("collect_list", item if absent else _f("coalesce", item, _s("null")))
        return _f("concat", _s("["), _f("array_join", texts, _s(",")), _s("]"))
    key = rewrite(node.this.copy())
    entry = _f("named_struct", _s("k"), key, _s("j"), _value_json(node.this, rewrite),
               _s("v"), _value_json(node.expression, rewrite))
    entries = _f("array_sort", _f("collect_list", entry))  # by key, as Flink writes them
    keys = _f("transform", entries.copy(), _lambda(_field("e", "k"), "e"))
    duplicate = _f("filter", keys.copy(), _lambda(
        exp.and_(exp.GT(this=exp.column("i"), expression=exp.Literal.number(0)),
                 exp.EQ(this=exp.column("x"), expression=exp.Bracket(
                     this=keys.copy(),
                     expressions=[exp.Sub(this=exp.column("i"),
                                          expression=exp.Literal.number(1))]))),
        "x", "i"))
    if absent:
        entries = _f("filter", entries, _lambda(
            exp.Not(this=exp.Is(this=_field("e", "v"), expression=exp.Null())), "e"))
    text = _f("concat", _field("e", "j"), _s(":"),
              _f("coalesce", _field("e", "v"), _s("null")))
    joined = _f("concat", _s("{"), _f("array_join", _f("transform", entries,
                                                       _lambda(text, "e")), _s(",")), _s("}"))
    # Flink fails the job on a NULL key (a NullPointerException) and on a duplicate key
    null_key = _f("exists", keys.copy(), _lambda(
        exp.Is(this=exp.column("x"), expression=exp.Null()), "x"))
    message = _f("concat", _s("Key '"), _f("element_at", duplicate, exp.Literal.number(1)),
                 _s("' is already present. Duplicate keys are not allowed in JSON_OBJECTAGG. "
                    "Please ensure that keys are unique."))
    return _case([(null_key, _fail("JSON_OBJECTAGG: a key is NULL (Flink fails on it)")),
                  (exp.GT(this=_f("size", duplicate.copy()), expression=exp.Literal.number(0)),
                   _f("raise_error", message))], joined)
