"""The Array API (2025.12) namespace: names, signatures, dtype functions, inspection, and agreement with NumPy.

Signatures are checked for compatibility with the standard's (written below from the 2025.12 specification):
every call the standard allows must work. A positional-only parameter may have any name (or be absorbed by
*args); a keyword-only one may also be positional-or-keyword (NumPy's spelling, kept so NumPy-style calls work);
a parameter the standard makes optional must not be required; extra parameters must have defaults.
"""
import inspect
import math
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
import minitensor as mt

P = inspect.Parameter
UNARY = ("abs acos acosh asin asinh atan atanh bitwise_invert ceil conj cos cosh exp expm1 floor imag isfinite isinf "
         "isnan log log1p log2 log10 logical_not negative positive real reciprocal round sign signbit sin sinh square "
         "sqrt tan tanh trunc").split()
BINARY = ("add atan2 bitwise_and bitwise_left_shift bitwise_or bitwise_right_shift bitwise_xor copysign divide equal "
          "floor_divide greater greater_equal hypot less less_equal logaddexp logical_and logical_or logical_xor "
          "maximum minimum multiply nextafter not_equal pow remainder subtract").split()
SPEC = [f"{f}(x, /)" for f in UNARY] + [f"{f}(x1, x2, /)" for f in BINARY] + """
clip(x, /, min=None, max=None)
arange(start, /, stop=None, step=1, *, dtype=None, device=None)
asarray(obj, /, *, dtype=None, device=None, copy=None)
empty(shape, *, dtype=None, device=None)
empty_like(x, /, *, dtype=None, device=None)
eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None)
from_dlpack(x, /, *, device=None, copy=None)
full(shape, fill_value, *, dtype=None, device=None)
full_like(x, /, fill_value, *, dtype=None, device=None)
linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True)
meshgrid(*arrays, indexing='xy')
ones(shape, *, dtype=None, device=None)
ones_like(x, /, *, dtype=None, device=None)
tril(x, /, *, k=0)
triu(x, /, *, k=0)
zeros(shape, *, dtype=None, device=None)
zeros_like(x, /, *, dtype=None, device=None)
astype(x, dtype, /, *, copy=True, device=None)
can_cast(from_, to, /)
finfo(type, /)
iinfo(type, /)
isdtype(dtype, kind)
result_type(*arrays_and_dtypes)
take(x, indices, /, *, axis=None)
matmul(x1, x2, /)
matrix_transpose(x, /)
tensordot(x1, x2, /, *, axes=2)
vecdot(x1, x2, /, *, axis=-1)
broadcast_arrays(*arrays)
broadcast_to(x, /, shape)
concat(arrays, /, *, axis=0)
expand_dims(x, /, *, axis=0)
flip(x, /, *, axis=None)
moveaxis(x, source, destination, /)
permute_dims(x, /, axes)
repeat(x, repeats, /, *, axis=None)
reshape(x, /, shape, *, copy=None)
roll(x, /, shift, *, axis=None)
squeeze(x, /, axis)
stack(arrays, /, *, axis=0)
tile(x, repetitions, /)
unstack(x, /, *, axis=0)
argmax(x, /, *, axis=None, keepdims=False)
argmin(x, /, *, axis=None, keepdims=False)
count_nonzero(x, /, *, axis=None, keepdims=False)
nonzero(x, /)
searchsorted(x1, x2, /, *, side='left', sorter=None)
where(condition, x1, x2, /)
unique_all(x, /)
unique_counts(x, /)
unique_inverse(x, /)
unique_values(x, /)
argsort(x, /, *, axis=-1, descending=False, stable=True)
sort(x, /, *, axis=-1, descending=False, stable=True)
cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False)
broadcast_shapes(*shapes)
isin(x1, x2, /, *, invert=False)
cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False)
take_along_axis(x, indices, /, *, axis=-1)
max(x, /, *, axis=None, keepdims=False)
mean(x, /, *, axis=None, keepdims=False)
min(x, /, *, axis=None, keepdims=False)
prod(x, /, *, axis=None, dtype=None, keepdims=False)
std(x, /, *, axis=None, correction=0.0, keepdims=False)
sum(x, /, *, axis=None, dtype=None, keepdims=False)
var(x, /, *, axis=None, correction=0.0, keepdims=False)
all(x, /, *, axis=None, keepdims=False)
any(x, /, *, axis=None, keepdims=False)
diff(x, /, *, axis=-1, n=1, prepend=None, append=None)
einsum(subscripts, /, *operands)
""".strip().splitlines()
EXTENSIONS = """
linalg.eig(x, /)
linalg.eigvals(x, /)
linalg.cholesky(x, /, *, upper=False)
linalg.cross(x1, x2, /, *, axis=-1)
linalg.det(x, /)
linalg.diagonal(x, /, *, offset=0)
linalg.eigh(x, /)
linalg.eigvalsh(x, /)
linalg.inv(x, /)
linalg.matmul(x1, x2, /)
linalg.matrix_norm(x, /, *, keepdims=False, ord='fro')
linalg.matrix_power(x, n, /)
linalg.matrix_rank(x, /, *, rtol=None)
linalg.matrix_transpose(x, /)
linalg.outer(x1, x2, /)
linalg.pinv(x, /, *, rtol=None)
linalg.qr(x, /, *, mode='reduced')
linalg.slogdet(x, /)
linalg.solve(x1, x2, /)
linalg.svd(x, /, *, full_matrices=True)
linalg.svdvals(x, /)
linalg.tensordot(x1, x2, /, *, axes=2)
linalg.trace(x, /, *, offset=0, dtype=None)
linalg.vecdot(x1, x2, /, *, axis=-1)
linalg.vector_norm(x, /, *, axis=None, keepdims=False, ord=2)
""".strip().splitlines() + \
  [f"fft.{f}(x, /, *, n=None, axis=-1, norm='backward')" for f in "fft ifft rfft irfft hfft ihfft".split()] + \
  [f"fft.{f}(x, /, *, s=None, axes=None, norm='backward')" for f in "fftn ifftn rfftn irfftn".split()] + \
  [f"fft.{f}(n, /, *, d=1.0, dtype=None, device=None)" for f in ("fftfreq", "rfftfreq")] + \
  [f"fft.{f}(x, /, *, axes=None)" for f in ("fftshift", "ifftshift")]
CONSTANTS = {"e": math.e, "pi": math.pi, "inf": math.inf}
DTYPE_NAMES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64",
               "complex64", "complex128"]


def spec(line: str) -> tuple[str, inspect.Signature]:
  ns: dict = {}
  exec(f"def {line}: pass", ns)
  name = line[:line.index("(")]
  return name, inspect.signature(ns[name])


def incompatibilities(impl: inspect.Signature, std: inspect.Signature) -> list[str]:
  """What a call allowed by std cannot do against impl (empty when compatible)."""
  ip, sp = list(impl.parameters.values()), list(std.parameters.values())
  ipos = [p for p in ip if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
  var_pos, var_kw = any(p.kind is P.VAR_POSITIONAL for p in ip), any(p.kind is P.VAR_KEYWORD for p in ip)
  named = {p.name: p for p in ip if p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)}
  bad, k = [], 0
  for p in sp:
    if p.kind is P.VAR_POSITIONAL:
      if not var_pos: bad.append(f"*{p.name} not accepted")
    elif p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD):
      if k >= len(ipos) and not var_pos: bad.append(f"positional {p.name} not accepted")
      elif p.kind is P.POSITIONAL_OR_KEYWORD and \
          not (k < len(ipos) and ipos[k].name == p.name and ipos[k].kind is P.POSITIONAL_OR_KEYWORD):
        bad.append(f"{p.name} must be positional-or-keyword at position {k}")
      if p.default is not P.empty and k < len(ipos) and ipos[k].default is P.empty:
        bad.append(f"{p.name} must be optional")
      k += 1
    elif p.name not in named and not var_kw: bad.append(f"keyword {p.name} not accepted")
    elif p.name in named and p.default is not P.empty and named[p.name].default is P.empty:
      bad.append(f"{p.name} must be optional")
  required = sum(p.default is P.empty for p in sp if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD))
  bad += [f"{p.name} is required" for p in ipos[required:] if p.default is P.empty]
  bad += [f"{p.name} is required" for p in ip
          if p.kind is P.KEYWORD_ONLY and p.default is P.empty and p.name not in std.parameters]
  return bad


# ---------------------------------------------------------------------- names and signatures
def test_namespace_names():
  x = mt.asarray([1.0])
  assert x.__array_namespace__() is mt and mt.__array_api_version__ == "2025.12"
  missing = [spec(line)[0] for line in SPEC if not callable(getattr(mt, spec(line)[0], None))]
  assert not missing, missing
  for name, v in CONSTANTS.items(): assert getattr(mt, name) == v
  assert math.isnan(mt.nan) and mt.newaxis is None
  for n in DTYPE_NAMES: assert getattr(mt, n) == np.dtype(n)
  assert mt.float32 == mt.asarray(np.ones(2, np.float32)).dtype
  assert mt.complex64 == mt.asarray(np.ones(2, np.complex64)).dtype


def explicit(impl: inspect.Signature, std: inspect.Signature) -> bool:
  """No *args standing in for parameters the standard names (add(x1, x2, /), not add(*args))."""
  return not any(p.kind is P.VAR_POSITIONAL for p in impl.parameters.values()) or \
    any(p.kind is P.VAR_POSITIONAL for p in std.parameters.values())


@pytest.mark.parametrize("line", SPEC + EXTENSIONS)
def test_signature(line):
  *module, line = line.split(".", 1) if line.startswith(("linalg.", "fft.")) else [line]
  name, std = spec(line)
  impl = inspect.signature(getattr(getattr(mt, module[0]) if module else mt, name))
  assert incompatibilities(impl, std) == [] and explicit(impl, std)


def test_signature_check_rejects():
  """The compatibility check itself: the mismatches it exists to catch."""
  std = spec("f(x, /, *, axis=0)")[1]
  for bad in ("g(x, axis)", "g(x)", "g(x, /, *, axis=0, copy)", "g(x, y, /, *, axis=0)"):
    assert incompatibilities(spec(bad)[1], std), bad
  for good in ("g(a, axis=0)", "g(*args, axis=0)", "g(x, /, axis=0, order='C', *, copy=None)"):
    assert not incompatibilities(spec(good)[1], std), good


# ---------------------------------------------------------------------- dtype functions and inspection
KINDS = ["bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating", "numeric"]


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_isdtype_finfo_iinfo(name):
  d = getattr(mt, name)
  for k in KINDS + [("bool", "real floating"), mt.int8, d]: assert mt.isdtype(d, k) == np.isdtype(d, k), k
  if d.kind in "fc":     # of a complex dtype: its real part's limits
    f, g = mt.finfo(d), np.finfo(d)
    want = (g.bits, g.eps, g.max, g.min, g.smallest_normal, g.dtype)
    assert (f.bits, f.eps, f.max, f.min, f.smallest_normal, f.dtype) == want
    assert all(isinstance(v, float) for v in (f.eps, f.max, f.min, f.smallest_normal))     # the standard's type
    assert [str(v) for v in (f.eps, f.max, f.min, f.smallest_normal)] == [str(v) for v in want[1:5]]   # NumPy's
    assert repr(f) == repr(g) and f.resolution == g.resolution and f.tiny == g.tiny
    assert mt.finfo(mt.zeros(2, dtype=d)).bits == g.bits
  elif d.kind in "iu":
    i, g = mt.iinfo(d), np.iinfo(d)
    assert (i.bits, i.max, i.min, i.dtype) == (g.bits, g.max, g.min, d) and type(i.max) is int
    assert repr(i) == repr(g) and mt.iinfo(mt.zeros(2, dtype=d)).max == g.max
  with pytest.raises(ValueError): mt.isdtype(d, "floating")
  with pytest.raises(TypeError): mt.isdtype("float32", "numeric")


@pytest.mark.parametrize("a", DTYPE_NAMES)
def test_result_type_can_cast(a):
  for b in DTYPE_NAMES:
    da, db = np.dtype(a), np.dtype(b)
    assert mt.result_type(da, db) == np.result_type(da, db)
    assert mt.result_type(mt.ones(1, dtype=da), db) == np.result_type(da, db)
    assert mt.can_cast(da, db) == np.can_cast(da, db)
    assert mt.can_cast(mt.ones(1, dtype=da), db) == np.can_cast(da, db)
  assert mt.result_type(np.dtype(a), 1.0) == np.result_type(np.dtype(a), 1.0)


def test_complex_dtypes_everywhere():
  for f, want in ((lambda: mt.asarray(np.ones(2, np.complex64)).dtype, np.complex64),
                  (lambda: mt.astype(mt.ones(2), np.complex128).dtype, np.complex128),
                  (lambda: mt.result_type(mt.float32, np.complex64), np.complex64),
                  (lambda: mt.zeros(2, dtype=np.complex64).dtype, np.complex64)):
    assert f() == want


def test_inspection_and_devices():
  info = mt.__array_namespace_info__()
  assert info.capabilities() == {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}
  assert info.default_device() == "cpu" and info.devices() == ("cpu",)
  assert info.default_dtypes() == {"real floating": mt.float64, "complex floating": mt.complex128, "integral": mt.int64,
                                   "indexing": mt.int64}
  assert info.dtypes() == {n: np.dtype(n) for n in DTYPE_NAMES}
  assert list(info.dtypes(kind="real floating")) == ["float32", "float64"]
  assert list(info.dtypes(kind=("bool", "unsigned integer"))) == ["bool", "uint8", "uint16", "uint32", "uint64"]
  assert list(info.dtypes(kind="complex floating")) == ["complex64", "complex128"]
  x = mt.asarray([1, 2], device="cpu")
  assert x.device == "cpu" and mt.astype(x, mt.float32, device="cpu").dtype == mt.float32
  for make in (lambda d: mt.zeros(3, device=d), lambda d: mt.ones_like(x, device=d), lambda d: mt.arange(3, device=d),
               lambda d: mt.eye(2, device=d), lambda d: mt.full(2, 1.5, device=d),
               lambda d: mt.linspace(0, 1, 3, device=d)):
    assert make("cpu").device == "cpu"
    with pytest.raises(ValueError): make("gpu")
  assert mt.zeros(2, dtype=None).dtype == mt.float64 and mt.empty_like(x, dtype=None).dtype == mt.int64
  assert np.array_equal(np.asarray(mt.from_dlpack(np.arange(3.))), np.arange(3.)) and mt.from_dlpack(x) is x


def test_standard_spellings():
  x = np.array([[1.5, -2.0, 3.0], [0.0, 4.0, -1.0]])
  for got, want in [(mt.clip(x, min=-1, max=2), np.clip(x, -1, 2)), (mt.clip(x, 0), np.clip(x, 0, None)),
                    (mt.clip(x, a_max=1), np.clip(x, None, 1)), (mt.expand_dims(x), np.expand_dims(x, 0)),
                    (mt.expand_dims(x, axis=(0, -1)), np.expand_dims(x, (0, -1))),
                    (mt.reshape(x, (3, 2), copy=False), x.reshape(3, 2)), (mt.reshape(x, shape=-1), x.ravel()),
                    (mt.permute_dims(x, (1, 0)), x.T), (mt.concat([x, x], axis=None), np.concatenate([x, x], None)),
                    (mt.pow(x, 2), x ** 2),
                    (mt.bitwise_left_shift(np.int8(3), np.arange(3, dtype=np.int8)),
                     np.int8(3) << np.arange(3, dtype=np.int8)),
                    (mt.bitwise_invert(np.arange(3)), ~np.arange(3)), (mt.real(x), x), (mt.imag(x), np.zeros_like(x)),
                    (mt.conj(x), x), (mt.acos(x / 5), np.arccos(x / 5)), (mt.atan2(x, 2.0), np.arctan2(x, 2.0)),
                    (mt.std(x, axis=1, correction=1), np.std(x, axis=1, ddof=1)), (mt.matrix_transpose(x), x.T)]:
    g = np.asarray(got)
    assert g.dtype == want.dtype and np.allclose(g, want, rtol=1e-15, atol=0)


# ---------------------------------------------------------------------- the composite elementwise functions
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1 - 1e-7, 2.0, 1e-300, 1e-30, 1e8, 3e8, 1e30, 1e300, np.inf, -np.inf,
           np.nan]
N = 24                                  # one shape: new values reuse the compiled kernel


def floats(dtype):
  w, big = 8 * np.dtype(dtype).itemsize, float(np.finfo(dtype).max)
  specials = [dtype(v) for v in SPECIAL if not abs(v) > big or v == np.inf or v == -np.inf]
  return hnp.arrays(dtype, N, elements=st.one_of(st.floats(width=w, allow_subnormal=False), st.sampled_from(specials)))


def close(got, want, ulps: float) -> None:
  g, w = np.asarray(got), np.asarray(want)
  assert g.dtype == w.dtype and g.shape == w.shape
  if w.dtype == np.bool_: return np.testing.assert_array_equal(g, w)
  assert np.array_equal(np.isnan(g), np.isnan(w)), (g, w)
  ok = ~np.isnan(w)
  assert np.array_equal(np.signbit(g[ok & (w == 0)]), np.signbit(w[ok & (w == 0)]))
  np.testing.assert_allclose(g[ok], w[ok], rtol=ulps * np.finfo(w.dtype).eps, atol=np.finfo(w.dtype).smallest_normal)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name, ref, ulps", [("acosh", np.arccosh, 4), ("asinh", np.arcsinh, 4),
                                             ("atanh", np.arctanh, 6),
                                             ("signbit", np.signbit, 0)])
@settings(max_examples=max(10, settings.default.max_examples // 3))
@given(data=st.data())
def test_unary_composites(dtype, name, ref, ulps, data):
  x = data.draw(floats(dtype))
  with np.errstate(all="ignore"): want = ref(x)
  close(getattr(mt, name)(x), want, ulps)      # (signbit: NumPy's, the sign bit of a NaN drawn with either sign too)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name, ref, ulps", [("hypot", np.hypot, 3), ("logaddexp", np.logaddexp, 4),
                                             ("copysign", np.copysign, 0)])
@settings(max_examples=max(10, settings.default.max_examples // 3))
@given(data=st.data())
def test_binary_composites(dtype, name, ref, ulps, data):
  a, b = data.draw(floats(dtype)), data.draw(floats(dtype))
  if name == "copysign": b[np.isnan(b)] = np.abs(b[np.isnan(b)])
  with np.errstate(all="ignore"): want = ref(a, b)
  close(getattr(mt, name)(a, b), want, ulps)


@pytest.mark.parametrize("name, ref", [("acosh", np.arccosh), ("asinh", np.arcsinh), ("atanh", np.arctanh),
                                       ("signbit", np.signbit), ("hypot", np.hypot), ("logaddexp", np.logaddexp),
                                       ("copysign", np.copysign)])
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int64])
def test_composite_dtypes(name, ref, dtype):
  x = (np.arange(6) % 3 + (dtype != np.bool_)).astype(dtype)
  args = (x,) * ref.nin
  with np.errstate(all="ignore"): want = ref(*args)
  close(getattr(mt, name)(*args), want, 8)
  if ref.nin == 2: close(getattr(mt, name)(x.astype(np.float32), 2.0), ref(x.astype(np.float32), 2.0), 8)


# ---------------------------------------------------------------------- an array-agnostic function
def standardized_softmax(x):
  """Written only against the namespace of x: works for any Array API array."""
  xp = x.__array_namespace__()
  z = (x - xp.mean(x, axis=-1, keepdims=True)) / xp.std(x, axis=-1, keepdims=True)
  e = xp.exp(z - xp.max(z, axis=-1, keepdims=True))
  return e / xp.sum(e, axis=-1, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@settings(max_examples=max(5, settings.default.max_examples // 6))
@given(data=st.data())
def test_array_agnostic(dtype, data):
  x = data.draw(hnp.arrays(dtype, (4, 7), elements=st.floats(-50, 50, width=8 * np.dtype(dtype).itemsize))
                .filter(lambda a: (a.std(-1) > 1e-3).all()))
  want = standardized_softmax(x)
  got = standardized_softmax(mt.asarray(x))
  assert isinstance(got, mt.Tensor) and got.dtype == want.dtype
  np.testing.assert_allclose(np.asarray(got), want, rtol=100 * np.finfo(dtype).eps, atol=10 * np.finfo(dtype).eps)


def test_info_dtypes_are_a_new_dict_each_call():
  """__array_namespace_info__().dtypes is answered from a cache per kind: a caller changing its dict changes no
  later answer."""
  info = mt.__array_namespace_info__()
  d = info.dtypes(kind="real floating")
  assert list(d) == ["float32", "float64"]
  d.clear()
  assert list(info.dtypes(kind="real floating")) == ["float32", "float64"]
  assert list(info.dtypes(kind=("bool", "complex floating"))) == ["bool", "complex64", "complex128"]
  with pytest.raises(ValueError): info.dtypes(kind="nonsense")
