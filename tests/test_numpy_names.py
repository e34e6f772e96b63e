"""minitensor.numpy_names: NumPy's error state and print options are NumPy's own (and shape how Tensors print),
NumPy's dtype objects and scalar types, mt.ndarray is Tensor, info and show_config."""
import io
import numpy as np
import pytest
import minitensor as mt


def test_error_state_is_numpys_own():
  for name in ("seterr", "geterr", "errstate", "seterrcall", "geterrcall"):
    assert getattr(mt, name) is getattr(np, name)
  old = mt.seterr(all="ignore")
  try: assert np.geterr()["divide"] == "ignore"
  finally: mt.seterr(**old)
  with mt.errstate(over="raise"): assert np.geterr()["over"] == "raise"


def test_print_options_shape_tensor_printing():
  t, a = mt.arange(2000.0) / 3, np.arange(2000.0) / 3
  with mt.printoptions(precision=2, threshold=5, edgeitems=1):
    assert np.get_printoptions()["precision"] == 2
    assert str(t) == str(a) and repr(t) == "Tensor" + repr(a)[5:-1] + ", dtype=float64)"
  old = mt.get_printoptions()
  try:
    mt.set_printoptions(threshold=float("inf"))
    assert str(mt.zeros((40, 40))) == str(np.zeros((40, 40))) and "..." not in str(mt.zeros((40, 40)))
  finally: mt.set_printoptions(**old)
  assert "..." in str(mt.zeros(5000))


def test_dtype_objects_and_scalar_types():
  assert mt.dtype is np.dtype and mt.ubyte is np.uint8 and mt.intc is np.int32 and mt.double is np.float64
  assert mt.zeros(3, dtype=mt.ubyte).dtype == np.uint8 and mt.issubdtype(mt.arange(3).dtype, mt.integer)
  assert mt.euler_gamma == np.euler_gamma and mt.little_endian == np.little_endian
  assert mt.asarray([1, 2])[mt.s_[::-1]].tolist() == [2, 1]
  with pytest.raises(TypeError, match="dtype"): mt.zeros(3, dtype=mt.dtype([("r", mt.ubyte), ("g", mt.ubyte)]))
  assert mt.datetime64("2016-07-01") + mt.timedelta64(1) == np.datetime64("2016-07-02")     # NumPy's scalars
  for d in (mt.datetime64, mt.str_, mt.void, mt.object_):
    with pytest.raises(TypeError, match="dtype"): mt.zeros(2, dtype=d)


def test_ndarray_is_tensor():
  t = mt.arange(3)
  assert mt.ndarray is mt.Tensor and isinstance(t, mt.ndarray) and not isinstance(t, np.ndarray)
  assert not isinstance(np.arange(3), mt.ndarray)


def test_info_and_show_config(capsys):
  out = io.StringIO()
  mt.info(mt.bincount, output=out)
  assert "weights" in out.getvalue() and "minlength" in out.getvalue()
  mt.info(mt.add)
  assert capsys.readouterr().out.strip()
  mt.show_config()
  text = capsys.readouterr().out
  assert text.startswith(f"minitensor {mt.__version__}") and "C compiler" in text and "kernel cache" in text
