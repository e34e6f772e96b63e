"""prelude: the C that kernels are compiled with, written once.

PRELUDE starts every translation unit: the helpers through which render_c spells what C leaves undefined or
rounds differently from NumPy (floor division and modulo, shifts past the width, integer powers, NaN-propagating
max and min, float to integer conversions) and the libmvec declarations of the vectorizable math functions.
COMPLEX_PRELUDE precedes a kernel with complex values (NumPy's formulas for *, / and **, its expm1, log1p and
lexicographic max/min). `vector_type` declares the GCC vector type and FMA of a register tile (gemm.py's
micro-kernel, attention.py's products).
"""
from __future__ import annotations
from minitensor.backend.ops import ALU_OPS

PRELUDE = r"""#include <math.h>
#include <stdint.h>
/* floating-point status flags as MXCSR's bits (fpstatus.py): INVALID 1, DIVIDE 4, OVERFLOW 8, UNDERFLOW 16 */
#if defined(__GNUC__) && !defined(__TINYC__) && defined(__x86_64__)
static inline void mt_fp_clear(void) { __builtin_ia32_ldmxcsr(__builtin_ia32_stmxcsr() & ~0x3fu); }
static inline int mt_fp_test(void) { return (int)(__builtin_ia32_stmxcsr() & 0x1du); }
static inline void mt_fp_raise(int f) { __builtin_ia32_ldmxcsr(__builtin_ia32_stmxcsr() | (unsigned)f); }
#else
#include <fenv.h>
static inline void mt_fp_clear(void) { feclearexcept(FE_ALL_EXCEPT); }
static inline int mt_fp_test(void) { int e = fetestexcept(FE_ALL_EXCEPT); return (e & FE_INVALID ? 1 : 0) |
  (e & FE_DIVBYZERO ? 4 : 0) | (e & FE_OVERFLOW ? 8 : 0) | (e & FE_UNDERFLOW ? 16 : 0); }
static inline void mt_fp_raise(int f)
{ feraiseexcept((f & 1 ? FE_INVALID : 0) | (f & 4 ? FE_DIVBYZERO : 0) | (f & 8 ? FE_OVERFLOW : 0)); }
#endif
/* the mark of a loop kernel: where a schedule is built at -O2 for its hand-vectorized kernels (tiers.HAND_FLAGS
   defines MT_LOOPS_O3), its loop kernels still get -O3's vectorizer (conv2d's padding copy: 0.73 -> 0.50 ms) */
#if defined(MT_LOOPS_O3) && defined(__GNUC__) && !defined(__clang__) && !defined(__TINYC__)
#define MT_LOOPS __attribute__((optimize("O3", "no-version-loops-for-strides")))
#else
#define MT_LOOPS
#endif
/* set by the runtime in a fork()ed child, where GNU OpenMP's thread pool is unusable: parallel loops run serially */
int mt_serial = 0;
#ifdef _OPENMP
int omp_get_max_threads(void);    /* (OpenMP's runtime; declared here, so no omp.h is needed) */
/* the chunk of a threaded loop of n iterations: 4 per thread, handed out dynamically, so a core slowed by other
   work takes fewer of them (each iteration computes its own outputs: the values do not depend on the split) */
static inline int64_t mt_chunk(int64_t n) { int64_t c = n / (4 * omp_get_max_threads()); return c > 1 ? c : 1; }
#endif
/* the sign bit of a float, read through a union (defined in C99): signbit(-0.0) and signbit(-NaN) are 1 */
static inline _Bool signbit_f32(float x) { union { float f; uint32_t u; } v; v.f = x; return (_Bool)(v.u >> 31); }
static inline _Bool signbit_f64(double x) { union { double f; uint64_t u; } v; v.f = x; return (_Bool)(v.u >> 63); }
#define MT_INT(T, U, S) \
static inline T floordiv_##S(T a, T b) { if (b == 0) { mt_fp_raise(4); return 0; } \
  if (b == -1) { if ((U)a == (U)1 << (8 * sizeof(T) - 1)) mt_fp_raise(8); return (T)(0 - (U)a); } T q = a / b; \
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; } \
static inline T floormod_##S(T a, T b) { if (b == 0) { mt_fp_raise(4); return 0; } if (b == -1) { return 0; } \
  T r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; } \
static inline T shl_##S(T a, T b) { return (b < 0 || b >= (T)(8 * sizeof(T))) ? 0 : (T)((uint64_t)a << b); } \
static inline T shr_##S(T a, T b) { return (b < 0 || b >= (T)(8 * sizeof(T))) ? (a < 0 ? -1 : 0) : (a >> b); } \
static inline T ipow_##S(T a, T b) { if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0; \
  U r = 1, x = (U)a; while (b) { if (b & 1) r *= x; x *= x; b >>= 1; } return (T)r; } \
static inline T max_##S(T a, T b) { return a > b ? a : b; } \
static inline T min_##S(T a, T b) { return a < b ? a : b; }
#define MT_UINT(T, S) \
static inline T floordiv_##S(T a, T b) { if (b == 0) { mt_fp_raise(4); return 0; } return a / b; } \
static inline T floormod_##S(T a, T b) { if (b == 0) { mt_fp_raise(4); return 0; } return a % b; } \
static inline T shl_##S(T a, T b) { return b >= 8 * sizeof(T) ? 0 : (T)(a << b); } \
static inline T shr_##S(T a, T b) { return b >= 8 * sizeof(T) ? 0 : (T)(a >> b); } \
static inline T ipow_##S(T a, T b) { T r = 1; while (b) { if (b & 1) r *= a; a *= a; b >>= 1; } return r; } \
static inline T max_##S(T a, T b) { return a > b ? a : b; } \
static inline T min_##S(T a, T b) { return a < b ? a : b; }
/* NumPy's ordered compares of floats are quiet (a NaN operand raises no INVALID). gcc vectorizes isless & co.
   into signaling compares (vcmpltpd), so in its code the compare reads copies whose NaNs are made 0 (a mask of
   bits) and the result is false where either operand is NaN; with & rather than &&, since gcc if-converts (and
   so vectorizes) a compare that may trap only where it is computed unconditionally */
#ifdef __TINYC__
#define MT_ORDER(T, S, U) \
static inline _Bool lt_##S(T a, T b) { return isless(a, b); } \
static inline _Bool le_##S(T a, T b) { return islessequal(a, b); }
#else
#define MT_ORDER(T, S, U) \
static inline T num_##S(T a) { union { T f; U u; } v = { a }; v.u &= (U)0 - (U)(a == a); return v.f; } \
static inline _Bool lt_##S(T a, T b) { return (a == a) & (b == b) & (num_##S(a) < num_##S(b)); } \
static inline _Bool le_##S(T a, T b) { return (a == a) & (b == b) & (num_##S(a) <= num_##S(b)); }
#endif
/* max_/min_ select by a mask of bits: through a ?: gcc threads a max into the min after it (clip) as branches,
   which it cannot if-convert. rmax_/rmin_ (and isless) in kernels with accumulators, whose reduce loops are hot
   (quiet compares made a row max 17 % and a count of x < y 33-50 % slower): gcc's signaling compares, whose
   INVALID fpstatus drops (spurious) or confirms at tier 0 */
#define MT_FLOAT(T, S, F, U) MT_ORDER(T, S, U) \
static inline T sel_##S(_Bool c, T a, T b) \
{ union { T f; U u; } x = { a }, y = { b }; U m = (U)0 - (U)c; x.u = (x.u & m) | (y.u & ~m); return x.f; } \
static inline T max_##S(T a, T b) { return sel_##S(lt_##S(b, a) | (a != a), a, b); } \
static inline T min_##S(T a, T b) { return sel_##S(lt_##S(a, b) | (a != a), a, b); } \
static inline T rmax_##S(T a, T b) { return (isgreater(a, b) || a != a) ? a : b; } \
static inline T rmin_##S(T a, T b) { return (isless(a, b) || a != a) ? a : b; } \
static inline T floormod_##S(T a, T b) { T m = fmod##F(a, b); if (!b) return m; \
  if (m) { if (isless(b, 0) != isless(m, 0)) m += b; } else m = copysign##F(0, b); return m; } \
static inline T floordiv_##S(T a, T b) { if (!b) return a / b; T m = fmod##F(a, b), d = (a - m) / b, f; \
  if (m && isless(b, 0) != isless(m, 0)) { d -= 1; } \
  if (d) { f = floor##F(d); if (isgreater(d - f, (T)0.5)) f += 1; } else { f = copysign##F(0, a / b); } return f; }
MT_INT(int32_t, uint32_t, i32) MT_INT(int64_t, uint64_t, i64) MT_UINT(uint32_t, u32) MT_UINT(uint64_t, u64)
MT_FLOAT(float, f32, f, uint32_t) MT_FLOAT(double, f64, , uint64_t)
/* float -> integer as NumPy's conversions compile on x86-64 (cvttss2si/cvttsd2si: out of range or NaN gives the
   "integer indefinite" INT_MIN of the width), defined in C for every input: int8/int16/uint8/uint16 truncate the
   32-bit result, uint32 the 64-bit one; uint64 converts x - 2^63 above 2^63 and flips the top bit back */
#define MT_F2I(T, S) \
static inline int32_t f2i32_##S(T x) \
{ if (isgreaterequal(x, (T)-0x1p31) && isless(x, (T)0x1p31)) return (int32_t)x; mt_fp_raise(1); return INT32_MIN; } \
static inline int64_t f2i64_##S(T x) \
{ if (isgreaterequal(x, (T)-0x1p63) && isless(x, (T)0x1p63)) return (int64_t)x; mt_fp_raise(1); return INT64_MIN; } \
static inline uint64_t f2u64_##S(T x) \
{ return x >= (T)0x1p63 ? (uint64_t)f2i64_##S(x - (T)0x1p63) ^ 0x8000000000000000ull : (uint64_t)f2i64_##S(x); }
MT_F2I(float, f32) MT_F2I(double, f64)
#ifdef __TINYC__
/* tcc's NAN is 0.0f / 0.0f, which is x86's default NaN: its sign bit is set. NumPy's (and gcc's) NAN is positive */
#undef NAN
#define NAN (((union { uint32_t u; float f; }){ 0x7fc00000u }).f)
/* negation flips the sign bit, NaN's too, as NumPy's negative (and gcc's -x); tcc computes x * -1.0 and -x as
   0 - x, which keeps a NaN's sign */
static inline float neg_f32(float x) { union { float f; uint32_t u; } v; v.f = x; v.u ^= 0x80000000u; return v.f; }
static inline double neg_f64(double x)
{ union { double f; uint64_t u; } v; v.f = x; v.u ^= 0x8000000000000000ull; return v.f; }
#else
#define neg_f32(x) (-(x))
#define neg_f64(x) (-(x))
/* NumPy's float16 maximum/minimum keep the first operand on ties (float32/64 keep the second); tcc has no
   _Float16 (kernels with float16 are compiled by the C compiler in every tier) */
static inline _Float16 max_f16(_Float16 a, _Float16 b) { return (le_f32(b, a) | (a != a)) ? a : b; }
static inline _Float16 min_f16(_Float16 a, _Float16 b) { return (le_f32(a, b) | (a != a)) ? a : b; }
#endif
/* a hint to fetch the cache line at p, to be written if w (render_c's row prefetch); tcc has no prefetch builtin */
#ifdef __TINYC__
#define mt_prefetch(p, w) ((void)(p))
#else
#define mt_prefetch(p, w) __builtin_prefetch(p, w)
#endif
/* non-temporal stores of whole vectors (render_c's streaming loop), x86 only: tcc compiles the plain loop */
#if defined(__GNUC__) && !defined(__TINYC__) && defined(__x86_64__)
#define MT_STREAM
typedef float mt_f32x4 __attribute__((vector_size(16))); typedef float mt_f32x8 __attribute__((vector_size(32)));
typedef float mt_f32x16 __attribute__((vector_size(64))); typedef double mt_f64x2 __attribute__((vector_size(16)));
typedef double mt_f64x4 __attribute__((vector_size(32))); typedef double mt_f64x8 __attribute__((vector_size(64)));
#define mt_stream(T, store, p, t) do { T mt_v; __builtin_memcpy(&mt_v, (t), sizeof mt_v); store((p), mt_v); } while (0)
#endif
/* checked mode: record the first out-of-bounds access (which buffer, which index) instead of making it */
static inline int64_t mt_oob(int64_t* err, int64_t slot, int64_t i)
{ if (!err[0]) { err[0] = 1; err[1] = slot; err[2] = i; } return 0; }
#if defined(__GNUC__) && !defined(__clang__) && !defined(__TINYC__) && defined(__x86_64__) && defined(__GLIBC__)
/* glibc's vector math library (libmvec): loops calling these vectorize; same special values as libm */
#define MT_SIMD(fn) __attribute__((simd("notinbranch"))) float fn##f(float); \
  __attribute__((simd("notinbranch"))) double fn(double);
#define MT_SIMD2(fn) __attribute__((simd("notinbranch"))) float fn##f(float, float); \
  __attribute__((simd("notinbranch"))) double fn(double, double);
"""


def _simd_decls() -> str:
  """The libmvec declarations of the ops the table marks `simd`, wrapped at 116 columns."""
  lines, line = [], ""
  for d in ALU_OPS.values():
    if not d.simd: continue
    w = f"MT_SIMD{'' if d.arity == 1 else d.arity}({d.c})"
    if line and len(line) + len(w) >= 116: lines.append(line); line = ""
    line += (" " if line else "") + w
  return "\n".join(lines + [line]) + "\n#endif\n"


PRELUDE += _simd_decls()

COMPLEX_PRELUDE = r"""#ifndef MT_COMPLEX_HELPERS
#define MT_COMPLEX_HELPERS
#include <complex.h>
#include <string.h>
#undef complex
#undef I
/* glibc defines CMPLX only for C11; the builtin keeps signed zeros, infinities and NaNs of both parts */
#define MT_CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#define MT_CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#define MT_CPLX(T, R, S, F, C, RE, IM) \
static inline T cmul_##S(T a, T b) { R ar = creal##F(a), ai = cimag##F(a), br = creal##F(b), bi = cimag##F(b); \
  return C(RE, IM); } \
static inline T cmulp_##S(T a, T b) { R ar = creal##F(a), ai = cimag##F(a), br = creal##F(b), bi = cimag##F(b); \
  return C(ar * br - ai * bi, ar * bi + ai * br); } \
static inline T cdiv_##S(T a, T b) { R ar = creal##F(a), ai = cimag##F(a), br = creal##F(b), bi = cimag##F(b); \
  R abr = fabs##F(br), abi = fabs##F(bi), t, d; \
  if (abr >= abi) { if (abr == 0 && abi == 0) return C(ar / abr, ai / abr); \
    t = bi / br; d = (R)1 / (br + bi * t); return C((ar + ai * t) * d, (ai - ar * t) * d); } \
  t = br / bi; d = (R)1 / (bi + br * t); return C((ar * t + ai) * d, (ai * t - ar) * d); } \
static inline T cpow_##S(T a, T b) { R ar = creal##F(a), ai = cimag##F(a), br = creal##F(b), bi = cimag##F(b); \
  if (br == 0 && bi == 0) return C(1, 0); \
  if (ar == 0 && ai == 0) return br > 0 ? C(0, 0) : C(NAN, NAN); \
  if (bi == 0 && br > -100 && br < 100 && (R)(int)br == br) { \
    int n = (int)br, k = n < 0 ? -n : n; T r = C(1, 0), p = a; \
    if (n >= 1 && n <= 3) return n == 1 ? a : n == 2 ? cmulp_##S(a, a) : cmulp_##S(a, cmulp_##S(a, a)); \
    for (;;) { if (k & 1) r = cmulp_##S(r, p); k >>= 1; if (!k) break; p = cmulp_##S(p, p); } \
    return n < 0 ? cdiv_##S(C(1, 0), r) : r; } \
  return cpow##F(a, b); } \
static inline T cexpm1_##S(T z) { R x = creal##F(z), y = cimag##F(z), h = sin##F(y / 2); \
  return C(expm1##F(x) * cos##F(y) - 2 * h * h, exp##F(x) * sin##F(y)); } \
static inline T cexp2_##S(T z) { return cexp##F(C(creal##F(z) * (R)0.693147180559945309417232121458176568, \
  cimag##F(z) * (R)0.693147180559945309417232121458176568)); } \
static inline T clog2_##S(T z) { T l = clog##F(z); R k = (R)1.442695040888963407359924681001892137; \
  return C(creal##F(l) * k, cimag##F(l) * k); } \
static inline T clog10_##S(T z) { T l = clog##F(z); R k = (R)0.434294481903251827651128918916605082; \
  return C(creal##F(l) * k, cimag##F(l) * k); } \
static inline int cge_##S(T a, T b) { R ar = creal##F(a), ai = cimag##F(a), br = creal##F(b), bi = cimag##F(b); \
  return (ar > br && ai == ai && bi == bi) || (ar == br && ai >= bi); } \
static inline int cle_##S(T a, T b) { R ar = creal##F(a), ai = cimag##F(a), br = creal##F(b), bi = cimag##F(b); \
  return (ar < br && ai == ai && bi == bi) || (ar == br && ai <= bi); } \
static inline T max_##S(T a, T b) { return (a != a || cge_##S(a, b)) ? a : b; } \
static inline T min_##S(T a, T b) { return (a != a || cle_##S(a, b)) ? a : b; } \
static inline T clog1p_##S(T z) { R x = creal##F(z) + 1, y = cimag##F(z); \
  return C(log##F(hypot##F(x, y)), atan2##F(y, x)); }
/* |z| of complex64 as glibc's hypotf computes it (sqrt of the sum of squares in double; inf if a part is inf, even
   with a NaN beside it), with the special cases done on the bits so that loops of it vectorize */
static inline float cabs_c64(float _Complex z) { float a = fabsf(crealf(z)), b = fabsf(cimagf(z)); uint32_t ua, ub;
  memcpy(&ua, &a, 4); memcpy(&ub, &b, 4);
  uint32_t za = (ub == 0x7f800000u) & (ua > 0x7f800000u), zb = (ua == 0x7f800000u) & (ub > 0x7f800000u);
  ua &= za - 1; ub &= zb - 1; memcpy(&a, &ua, 4); memcpy(&b, &ub, 4);
  return (float)sqrt((double)a * a + (double)b * b); }
/* |z| of complex128 within 2 ulp of NumPy's (measured; NumPy's own loop is not glibc's hypot either): the parts scaled
   by a power of two taken from the larger one's exponent (no overflow or underflow of the squares), the same
   special cases */
#define MT_INF64 0x7ff0000000000000ull
static inline double cabs_c128(double _Complex z) { double a = fabs(creal(z)), b = fabs(cimag(z)), sf;
  uint64_t ua, ub, e; memcpy(&ua, &a, 8); memcpy(&ub, &b, 8);
  uint64_t za = (ub == MT_INF64) & (ua > MT_INF64), zb = (ua == MT_INF64) & (ub > MT_INF64);
  ua &= za - 1; ub &= zb - 1; memcpy(&a, &ua, 8); memcpy(&b, &ub, 8);
  e = (ua > ub ? ua : ub) >> 52; e = e < 1 ? 1 : e > 2045 ? 2045 : e; e = (2046 - e) << 52; memcpy(&sf, &e, 8);
  a *= sf; b *= sf; return sqrt(a * a + b * b) / sf; }
/* NumPy's complex64 multiply (and square) runs its SIMD loop, which fuses: re = fma(ar, br, -ai*bi),
   im = fma(ar, bi, ai*br) (on this x86-64 with FMA3; it shows when a partial product overflows); complex128's is
   the plain formula. npy_cpow's integer powers use the plain formula for both (cmulp) */
MT_CPLX(float _Complex, float, c64, f, MT_CMPLXF, fmaf(ar, br, -(ai * bi)), fmaf(ar, bi, ai * br))
MT_CPLX(double _Complex, double, c128, , MT_CMPLX, ar * br - ai * bi, ar * bi + ai * br)
#endif
"""


# x86 FMA builtins by (vector bytes, itemsize): what <immintrin.h>'s intrinsics expand to (that header alone
# costs ~1 s of compile time); elsewhere, or without FMA, a multiply then an add
FMA_BUILTINS = {(16, 4): ("__FMA__", "__builtin_ia32_vfmaddps(a, b, c)"),
                (16, 8): ("__FMA__", "__builtin_ia32_vfmaddpd(a, b, c)"),
                (32, 4): ("__FMA__", "__builtin_ia32_vfmaddps256(a, b, c)"),
                (32, 8): ("__FMA__", "__builtin_ia32_vfmaddpd256(a, b, c)"),
                (64, 4): ("__AVX512F__", "__builtin_ia32_vfmaddps512_mask(a, b, c, (unsigned short)-1, 4)"),
                (64, 8): ("__AVX512F__", "__builtin_ia32_vfmaddpd512_mask(a, b, c, (unsigned char)-1, 4)")}


def vector_type(name: str, ct: str, vb: int) -> str:
  """C declaring `<name>_v`, a GCC vector of vb bytes of ct, and `<name>_fma(a, b, c)`, a * b + c rounded once
  (an FMA instruction where the target has one, else a multiply then an add), for register tiles (gemm.py's
  micro-kernel, attention.py's products). tcc has no vector types (tiers.tcc_lacks)."""
  guard, fma = FMA_BUILTINS.get((vb, 8 if ct == "double" else 4), ("MT_NO_FMA", ""))
  return (f"typedef {ct} {name}_v __attribute__((vector_size({vb})));\n"
          f"#if defined(__x86_64__) && defined({guard})\n#define {name}_fma(a, b, c) {fma}\n"
          f"#else\n#define {name}_fma(a, b, c) ((c) + (a) * (b))\n#endif\n")
