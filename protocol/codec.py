"""The generic codec of minikafka's own protocol: a declared message to and from a msgpack-ready map, validated.

Messages are dataclasses (declared with `message`) or NamedTuples whose annotations drive the codec: Int8/Int16/
Int32/Int64 (ints with a range; bool is not an int), bool, str, bytes (msgpack bin, passed through uncopied),
``X | None``, ``list[X]``, ``dict[str, X]`` and nested messages (generic ones too). Map keys are the field names. A
missing field takes its default; a missing field without one, a value of the wrong type or an int out of range is
refused with the path of the field. Unknown keys are ignored. Encoding validates the same way, so a handler bug
surfaces where it happens, not on the peer. The envelope around a body (header, errors) is protocol.envelope's.
"""

import dataclasses
import types
import typing
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, NamedTuple, TypeVar, dataclass_transform

from protocol.errors import ProtocolError


@dataclass(frozen=True, slots=True)
class IntWidth:
    """The wire width of an int field: its name and inclusive range."""

    name: str
    min: int
    max: int


Int8 = Annotated[int, IntWidth("int8", -(2**7), 2**7 - 1)]
Int16 = Annotated[int, IntWidth("int16", -(2**15), 2**15 - 1)]
Int32 = Annotated[int, IntWidth("int32", -(2**31), 2**31 - 1)]
Int64 = Annotated[int, IntWidth("int64", -(2**63), 2**63 - 1)]

_T = TypeVar("_T")


@dataclass_transform(kw_only_default=True)
def message(cls: type[_T]) -> type[_T]:
    """Declare a wire message: a slotted dataclass constructed with keyword arguments."""
    return dataclass(slots=True, kw_only=True)(cls)


class ValidationError(ProtocolError):
    """A message (or message body) with a field of the wrong type or range, or a missing field."""

    def __init__(self, label: str, path: str, problem: str) -> None:
        super().__init__(f"{label}: {path}: {problem}" if path else f"{label}: {problem}")
        self.label = label
        self.path = path
        self.problem = problem


Convert = Callable[[Any], Any]
_WIRE_TYPE_NAMES = {dict: "map", type(None): "null"}


class _FieldError(Exception):
    """A value that does not fit its declaration; the path is collected innermost first on the way out."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.segments: list[str] = []


def type_name(value: object) -> str:
    """A value's type as the protocol's messages name it ("map", "null", "int", ...)."""
    return _WIRE_TYPE_NAMES.get(type(value), type(value).__name__)


def _format_path(segments: list[str]) -> str:
    path = ""
    for segment in reversed(segments):
        path += segment if not path or segment.startswith("[") else "." + segment
    return path


def _int_checker(width: IntWidth) -> Convert:
    lo, hi, name = width.min, width.max, width.name

    def check(value: Any) -> Any:
        if type(value) is not int and (not isinstance(value, int) or isinstance(value, bool)):
            raise _FieldError(f"expected {name}, got {type_name(value)}")
        if not lo <= value <= hi:
            raise _FieldError(f"expected {name} in [{lo}, {hi}], got {value}")
        return value

    return check


def _type_checker(accepted: type | tuple[type, ...], name: str) -> Convert:
    def check(value: Any) -> Any:
        if not isinstance(value, accepted):
            raise _FieldError(f"expected {name}, got {type_name(value)}")
        return value

    return check


def _check_bool(value: Any) -> Any:
    if type(value) is not bool:
        raise _FieldError(f"expected bool, got {type_name(value)}")
    return value


_check_str = _type_checker(str, "str")
# bytes fields decode only from msgpack bin; encoding also takes other buffers (e.g. a memoryview of
# a segment file) so that msgpack's own copy is the only one.
_check_bytes = _type_checker(bytes, "bytes")
_check_buffer = _type_checker((bytes, bytearray, memoryview), "bytes")

#: Byte fields at least this long are not copied into a response's msgpack buffer (envelope.encode_response_parts).
PASS_THROUGH_BYTES = 64 * 1024
#: While encode_response_parts encodes: the list its long byte fields go to, and their placeholders' token.
PASS_THROUGH: ContextVar[tuple[list[bytes | bytearray | memoryview], bytes] | None] = ContextVar(
    "pass_through", default=None)


def _encode_buffer(value: Any) -> Any:
    """A bytes field, checked; a long one is set aside for encode_response_parts when it is encoding."""
    _check_buffer(value)
    if len(value) >= PASS_THROUGH_BYTES:
        collecting = PASS_THROUGH.get()
        if collecting is not None:
            large, token = collecting
            large.append(value)
            return token + (len(large) - 1).to_bytes(8, "big")
    return value


def _nullable(inner: Convert) -> Convert:
    def convert(value: Any) -> Any:
        return None if value is None else inner(value)

    return convert


def _list_converter(element: Convert, accepted: type | tuple[type, ...], checks_only: bool) -> Convert:
    """A list converter; if the element converter only checks (returns its input), the list itself
    is returned after checking, not copied."""

    def convert(value: Any) -> Any:
        if not isinstance(value, accepted):
            raise _FieldError(f"expected list, got {type_name(value)}")
        out = value if checks_only else []
        for index, item in enumerate(value):
            try:
                converted = element(item)
            except _FieldError as e:
                e.segments.append(f"[{index}]")
                raise
            if not checks_only:
                out.append(converted)
        return out

    return convert


def _dict_converter(value_converter: Convert) -> Convert:
    def convert(value: Any) -> Any:
        if not isinstance(value, dict):
            raise _FieldError(f"expected map, got {type_name(value)}")
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _FieldError(f"expected str keys, got {type_name(key)}")
            try:
                out[key] = value_converter(item)
            except _FieldError as e:
                e.segments.append(f"[{key!r}]")
                raise
        return out

    return convert


class _Codec(NamedTuple):
    encode: Convert
    decode: Convert
    checks_only: bool  # both directions return their input unchanged


_STRUCT_CODECS: dict[Any, _Codec] = {}
_LABELS: dict[Any, str] = {}


def _is_named_tuple(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, tuple) and hasattr(hint, "_fields")


def _bind(hint: Any, params: dict[Any, Any]) -> Any:
    """`hint` with the type parameters of a generic message replaced by their arguments."""
    if isinstance(hint, TypeVar):
        if hint not in params:
            raise TypeError(f"unbound type parameter {hint}")
        return params[hint]
    hint_params = getattr(hint, "__parameters__", ())
    return hint[tuple(_bind(p, params) for p in hint_params)] if hint_params else hint


def _codec(hint: Any) -> _Codec:
    """The encoder and decoder for a declared field type."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Annotated and isinstance(args[1], IntWidth):
        check = _int_checker(args[1])
        return _Codec(check, check, True)
    if hint is bool:
        return _Codec(_check_bool, _check_bool, True)
    if hint is str:
        return _Codec(_check_str, _check_str, True)
    if hint is bytes:
        return _Codec(_encode_buffer, _check_bytes, False)
    if origin in (typing.Union, types.UnionType) and type(None) in args and len(args) == 2:
        inner = _codec(next(a for a in args if a is not type(None)))
        return _Codec(_nullable(inner.encode), _nullable(inner.decode), inner.checks_only)
    if origin is list:
        element = _codec(args[0])
        return _Codec(
            _list_converter(element.encode, (list, tuple), element.checks_only),
            _list_converter(element.decode, list, element.checks_only),
            element.checks_only,
        )
    if origin is dict and args[0] is str:
        value = _codec(args[1])
        return _Codec(_dict_converter(value.encode), _dict_converter(value.decode), False)
    if dataclasses.is_dataclass(origin or hint) or _is_named_tuple(hint):
        return _struct_codec(hint)
    if hint is int:
        raise TypeError("declare int fields with a width: Int8, Int16, Int32 or Int64")
    raise TypeError(f"unsupported field type {hint!r}")


def _fields(cls: Any) -> list[tuple[str, bool]]:
    """A message's field names, each with whether it has a default."""
    if _is_named_tuple(cls):
        return [(name, name in cls._field_defaults) for name in cls._fields]
    return [(f.name, f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING)
            for f in dataclasses.fields(cls)]


def _struct_codec(hint: Any) -> _Codec:
    """The (cached) codec of a message type, or of a generic message with its arguments."""
    cached = _STRUCT_CODECS.get(hint)
    if cached is not None:
        return cached
    cls = typing.get_origin(hint) or hint
    params = dict(zip(getattr(cls, "__parameters__", ()), typing.get_args(hint), strict=False))
    hints = typing.get_type_hints(cls, include_extras=True)
    encoders: list[tuple[str, Convert]] = []
    decoders: list[tuple[str, Convert, bool]] = []
    for name, has_default in _fields(cls):
        codec = _codec(_bind(hints[name], params))
        encoders.append((name, codec.encode))
        decoders.append((name, codec.decode, has_default))

    def encode(obj: Any) -> dict[str, Any]:
        if type(obj) is not cls:
            raise _FieldError(f"expected {cls.__name__}, got {type_name(obj)}")
        out = {}
        for name, convert in encoders:
            try:
                out[name] = convert(getattr(obj, name))
            except _FieldError as e:
                e.segments.append(name)
                raise
        return out

    def decode(data: Any) -> Any:
        if type(data) is not dict:
            raise _FieldError(f"expected map, got {type_name(data)}")
        kwargs = {}
        for name, convert, has_default in decoders:
            try:
                if name in data:
                    kwargs[name] = convert(data[name])
                elif not has_default:
                    raise _FieldError("missing required field")
            except _FieldError as e:
                e.segments.append(name)
                raise
        return cls(**kwargs)

    codec = _STRUCT_CODECS[hint] = _Codec(encode, decode, False)
    return codec


def declare(cls: Any, label: str) -> None:
    """Name a message type in the errors that concern it ("Produce request: ...") and build its codec now, so
    that a declaration error fails at import and no message pays for the build."""
    _LABELS[cls] = label
    _struct_codec(cls)


def label(cls: Any) -> str:
    """How errors name a message type: its declared label, else its class name."""
    return _LABELS.get(cls) or getattr(cls, "__name__", repr(cls))


def _convert(convert: Convert, value: Any, cls: Any) -> Any:
    try:
        return convert(value)
    except _FieldError as e:
        raise ValidationError(label(cls), _format_path(e.segments), e.problem) from None


def encode_body(obj: Any, cls: Any = None) -> dict[str, Any]:
    """A message as a msgpack-ready map, declared as `cls` (by default its own type); raises ValidationError if a
    field does not fit its declaration, or if `obj` is not a `cls`."""
    cls = type(obj) if cls is None else cls
    return _convert(_struct_codec(cls).encode, obj, cls)


def decode_body(cls: Any, data: Any) -> Any:
    """The message of type `cls` held in a decoded msgpack map; raises ValidationError with the path."""
    return _convert(_struct_codec(cls).decode, data, cls)
