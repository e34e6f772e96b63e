"""views.reshape_strides: when a reshape of a view is a view (NumPy's no-copy rule), against NumPy's own views."""
import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from minitensor.views import reshape_strides


@st.composite
def views_and_shapes(draw):
  """A strided view of an arange (a transpose, maybe reversed or sliced by 2) and a shape of the same size."""
  shape = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 4, 6]), min_size=1, max_size=4)))
  v = np.arange(int(np.prod(shape)) * 2).reshape((2,) + shape)[draw(st.sampled_from([0, 1]))]
  v = v.transpose(draw(st.permutations(range(len(shape)))))
  if draw(st.booleans()): v = v[::-1]
  new, rest = [], v.size
  while rest > 1 and len(new) < 4:
    d = draw(st.sampled_from([x for x in range(1, rest + 1) if rest % x == 0]))
    new.append(d)
    rest //= d
  new = draw(st.permutations(new + [rest]))
  return v, tuple(new)


@given(views_and_shapes())
def test_reshape_of_a_view_is_numpys_no_copy_reshape(case):
  """reshape_strides gives strides exactly when NumPy can reshape the view without a copy, and they address the same
  elements as NumPy's reshape."""
  v, new = case
  base = v.base if v.base is not None else v
  off = (v.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // v.itemsize
  got = reshape_strides(v.shape, tuple(s // v.itemsize for s in v.strides), new)
  try:
    w = v.view()
    w.shape = new
  except AttributeError: w = None
  assert (got is None) == (w is None)
  if got is not None:
    idx = np.indices(new).reshape(len(new), -1).T
    flat = base.reshape(-1)
    assert [flat[off + sum(int(i) * s for i, s in zip(ix, got))] for ix in idx] == v.reshape(new).reshape(-1).tolist()


def test_reshape_of_an_empty_view_is_not_strided():
  assert reshape_strides((2, 0, 3), (0, 3, 1), (0, 6)) is None
