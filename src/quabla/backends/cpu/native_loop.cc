// Tier 1 of the loop compiler: a scan whose body has a scalar form (scalar_loop.h) becomes
// one C function for the whole loop (registers as typed locals, carries kept in them from
// step to step), compiled by the system C compiler with -O2 -ffp-contract=off (no fused
// multiply-add, so every operation rounds as the kernels' do), loaded with dlopen and used
// for later calls. libmvec functions and the ops that run as kernels are reached through a
// table passed in, so results stay bitwise those of tier 0 and of the kernel plan.
//
// Shared objects are cached on disk under <cache>/loops (runtime/native_build.h). QUABLA_LOOP_JIT=0
// disables tier 1; QUABLA_LOOP_JIT=sync builds at the first call instead of in the
// background; QUABLA_CC names the compiler (default cc). Without a working compiler every
// loop stays on tier 0 (QUABLA_LOOP_JIT_DEBUG=1 prints why, once).
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

#include "quabla/backends/cpu/scalar_loop.h"
#include "quabla/backends/cpu/scalar_loop_ir.h"
#include "quabla/backends/cpu/vector_math.h"
#include "quabla/runtime/native_build.h"

namespace qb::cpu {

namespace {

// What the generated code calls back (the same layout as QbEnv in the C source).
struct NativeEnv {
  void (*call)(void* ctx, int index, Reg* regs);
  void (*vec_f64)(int op, const double* x, double* y);
  void (*vec_f32)(int op, const float* x, float* y);
  void* ctx;
  std::byte* scratch;  // the state's large values
  std::byte* big_tmp;  // and the temporaries of their carry moves
};

struct CallContext {
  const ScalarBody* body;
  ScalarBody::State* state;
  std::exception_ptr error;  // a kernel that threw: rethrown once the native code returns
};

const char* c_type(DType d) {
  switch (d) {
    case DType::f64: return "double";
    case DType::f32: return "float";
    case DType::i64: return "int64_t";
    case DType::i32: return "int32_t";
    case DType::bool_: return "uint8_t";
    case DType::c64: case DType::c128: QB_NARROW_INT_CASES: break;  // lowered before planning
  }
  return "double";
}

const char* member(DType d) {
  switch (d) {
    case DType::f64: return "f64";
    case DType::f32: return "f32";
    case DType::i64: return "i64";
    case DType::i32: return "i32";
    case DType::bool_: return "b";
    case DType::c64: case DType::c128: QB_NARROW_INT_CASES: break;  // lowered before planning
  }
  return "f64";
}

bool debug() {
  const char* v = std::getenv("QUABLA_LOOP_JIT_DEBUG");
  return v && *v && std::string_view(v) != "0";
}

void say(const std::string& what) {
  static std::once_flag once;
  if (debug()) std::call_once(once, [&] { std::fprintf(stderr, "quabla: loop compiler tier 1 off: %s\n", what.c_str()); });
}

std::string jit_mode() {
  const char* v = std::getenv("QUABLA_LOOP_JIT");
  return v ? std::string(v) : std::string();
}

std::string compiler() {
  const char* v = std::getenv("QUABLA_CC");
  return v && *v ? std::string(v) : std::string("cc");
}

constexpr const char* kFlags = "-O2 -ffp-contract=off -fno-strict-aliasing -fPIC -shared -w";

using Fn = void*;

// The loop function of this source: from the cache, or built and cached.
Fn build(const std::string& source) {
  const native::Build b = native::build_shared_object(source, compiler(), kFlags, "loops", ".c", {"-lm"});
  if (!b.handle) {
    say(b.error.rfind("no working compiler", 0) == 0 ? "no working C compiler (" + compiler() + "; set QUABLA_CC)"
                                                      : b.error.substr(0, 400));
    return nullptr;
  }
  Fn f = ::dlsym(b.handle, "qb_loop");
  if (!f) say("no qb_loop in " + b.path);
  else if (debug()) std::fprintf(stderr, "quabla: loop compiler tier 1 loaded %s\n", b.path.c_str());
  return f;
}

extern "C" void qb_native_vec_f64(int op, const double* x, double* y) { vector_unary_f64(static_cast<Op>(op), x, y, 1); }
extern "C" void qb_native_vec_f32(int op, const float* x, float* y) { vector_unary_f32(static_cast<Op>(op), x, y, 1); }

}  // namespace

// Reaches the private parts of ScalarBody for the emitter and the call trampoline.
struct NativeAccess {
  static void call(const ScalarBody& b, int index, ScalarBody::State& s) { b.call(b.calls_[static_cast<std::size_t>(index)], s); }
};

namespace {

extern "C" void qb_native_call(void* ctx, int index, Reg*) {
  auto* c = static_cast<CallContext*>(ctx);
  if (c->error) return;
  try {
    NativeAccess::call(*c->body, index, *c->state);
  } catch (...) {
    c->error = std::current_exception();
  }
}

}  // namespace

class NativeEmitter {
 public:
  explicit NativeEmitter(const ScalarBody& b) : b_(&b) {}

  // The scan: steps [first, last) of len; consts, carries and xs as in the scan's body.
  std::string scan_source(std::size_t nc, std::size_t nk) {
    std::ostringstream o;
    prelude(o);
    o << "void qb_loop(Reg* r, const QbEnv* env, int64_t first, int64_t last, int64_t len, int64_t start, int reverse,\n"
         "             const unsigned char* const* xs, unsigned char* const* ys) {\n";
    locals(o, *b_, 'v', "r");
    o << "  for (int64_t step = first; step < last; ++step) {\n"
         "    const int64_t t = reverse ? len - 1 - step : step;\n";
    o << "    v" << b_->params_[0][0] << " = (double)(start + t);\n";
    const std::size_t nx = b_->params_.size() - 1 - nc - nk;
    for (std::size_t i = 0; i < nx; ++i) {
      const auto& regs = b_->params_[1 + nc + nk + i];
      const std::size_t item = b_->param_item_[1 + nc + nk + i];
      if (const auto& slot = b_->param_slot_[1 + nc + nk + i]; slot.big)
        o << "    memcpy(env->scratch + " << slot.offset << ", xs[" << i << "] + t * " << slot.bytes << ", " << slot.bytes
          << ");\n";
      for (std::size_t e = 0; e < regs.size(); ++e)
        o << "    memcpy(&v" << regs[e] << ", xs[" << i << "] + (t * " << regs.size() << " + " << e << ") * " << item
          << ", " << item << ");\n";
    }
    code(o, *b_, 'v', "env", "r");
    const std::size_t ny = b_->results_.size() - nk;
    for (std::size_t j = 0; j < ny; ++j) {
      const auto& regs = b_->results_[nk + j];
      const std::size_t item = b_->result_item_[nk + j];
      if (const auto& slot = b_->result_slot_[nk + j]; slot.big)
        o << "    memcpy(ys[" << j << "] + t * " << slot.bytes << ", env->scratch + " << slot.offset << ", " << slot.bytes
          << ");\n";
      for (std::size_t e = 0; e < regs.size(); ++e)
        o << "    memcpy(ys[" << j << "] + (t * " << regs.size() << " + " << e << ") * " << item << ", &v" << regs[e]
          << ", " << item << ");\n";
    }
    carry_moves(o, *b_, 1 + nc, nk, "env");
    o << "  }\n";
    store_carries(o, *b_, 1 + nc, nk, 'v', "r");
    o << "}\n";
    return o.str();
  }

  // The while loop with condition `cond` (registers prefixed c, in rc) over this body
  // (prefixed v, in rb): at most max_steps iterations; returns 1 once the condition is
  // false, 0 when max_steps ran out first (the caller polls for Ctrl-C and calls again).
  std::string while_source(const ScalarBody& cond, std::size_t nc) {
    const std::size_t nk = b_->params_.size() - nc;
    std::ostringstream o;
    prelude(o);
    o << "int qb_loop(Reg* rc, Reg* rb, const QbEnv* envc, const QbEnv* envb, int64_t max_steps) {\n";
    locals(o, cond, 'c', "rc");
    locals(o, *b_, 'v', "rb");
    o << "  int done = 0;\n  for (int64_t step = 0; step < max_steps; ++step) {\n";
    for (std::size_t k = 0; k < nk; ++k) {
      const auto& from = b_->params_[nc + k];
      const auto& to = cond.params_[nc + k];
      for (std::size_t e = 0; e < from.size(); ++e) o << "    c" << to[e] << " = v" << from[e] << ";\n";
      if (const auto& slot = b_->param_slot_[nc + k]; slot.big)
        o << "    memcpy(envc->scratch + " << cond.param_slot_[nc + k].offset << ", envb->scratch + " << slot.offset
          << ", " << slot.bytes << ");\n";
    }
    code(o, cond, 'c', "envc", "rc");
    o << "    if (!c" << cond.results_[0][0] << ") { done = 1; break; }\n";
    code(o, *b_, 'v', "envb", "rb");
    carry_moves(o, *b_, nc, nk, "envb");
    o << "  }\n";
    store_carries(o, *b_, nc, nk, 'v', "rb");
    o << "  return done;\n}\n";
    return o.str();
  }

 private:
  using Kind = ScalarBody::Kind;

  static void prelude(std::ostringstream& o) {
    o << "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n"
         "typedef union { double f64; float f32; int64_t i64; int32_t i32; uint8_t b; uint64_t raw; } Reg;\n"
         "typedef struct { void (*call)(void*, int, Reg*); void (*vec_f64)(int, const double*, double*);\n"
         "  void (*vec_f32)(int, const float*, float*); void* ctx; unsigned char* scratch; unsigned char* big_tmp; } QbEnv;\n"
         "static inline double qb_maxd(double a, double b) { if (a != a) return a; if (b != b) return b; return a > b ? a : b; }\n"
         "static inline double qb_mind(double a, double b) { if (a != a) return a; if (b != b) return b; return a < b ? a : b; }\n"
         "static inline float qb_maxf(float a, float b) { if (a != a) return a; if (b != b) return b; return a > b ? a : b; }\n"
         "static inline float qb_minf(float a, float b) { if (a != a) return a; if (b != b) return b; return a < b ? a : b; }\n";
  }

  // Every register as a typed local, loaded from the register file.
  static void locals(std::ostringstream& o, const ScalarBody& b, char prefix, const char* regs) {
    for (std::size_t i = 0; i < b.num_regs_; ++i) {
      const DType d = b.reg_dtype_[i];
      o << "  " << c_type(d) << " " << prefix << i << " = " << regs << "[" << i << "]." << member(d) << ";\n";
    }
  }

  // Carries: one parallel assignment.
  static void carry_moves(std::ostringstream& o, const ScalarBody& b, std::size_t first_param, std::size_t nk,
                          const char* env) {
    const auto moves = b.results_to_params(0, first_param, nk);
    o << "    {\n";
    for (std::size_t m = 0; m < moves.src.size(); ++m)
      o << "      const " << c_type(b.reg_dtype_[moves.src[m]]) << " t" << m << " = v" << moves.src[m] << ";\n";
    for (std::size_t m = 0; m < moves.dst.size(); ++m) o << "      v" << moves.dst[m] << " = t" << m << ";\n";
    for (const auto& m : moves.big)
      o << "      memcpy(" << env << "->big_tmp + " << m.tmp << ", " << env << "->scratch + " << m.src << ", " << m.bytes
        << ");\n";
    for (const auto& m : moves.big)
      o << "      memcpy(" << env << "->scratch + " << m.dst << ", " << env << "->big_tmp + " << m.tmp << ", " << m.bytes
        << ");\n";
    o << "    }\n";
  }

  static void store_carries(std::ostringstream& o, const ScalarBody& b, std::size_t first_param, std::size_t nk,
                            char prefix, const char* regs) {
    for (std::size_t k = 0; k < nk; ++k)
      for (auto reg : b.params_[first_param + k])
        o << "  " << regs << "[" << reg << "]." << member(b.reg_dtype_[reg]) << " = " << prefix << reg << ";\n";
  }

  void code(std::ostringstream& o, const ScalarBody& b, char prefix, const char* env, const char* regs) {
    cur_ = &b;
    prefix_ = prefix;
    env_ = env;
    regs_ = regs;
    for (const auto& in : b.code_) emit(o, in);
  }

  // "v<r>", built by appending (GCC 12 misreports "v" + std::string under -Wrestrict).
  std::string reg_name(std::uint32_t r) const {
    std::string s(1, prefix_);
    s.append(std::to_string(r));
    return s;
  }

  void emit(std::ostringstream& o, const ScalarBody::Instr& in) {
    const std::string d = reg_name(in.d), a = reg_name(in.a), b = reg_name(in.b), c = reg_name(in.c);
    auto line = [&](const std::string& rhs) { o << "    " << d << " = " << rhs << ";\n"; };
    auto wrap = [&](const char* u, const char* s, const char* op) {
      line(std::string("(") + s + ")((" + u + ")" + a + " " + op + " (" + u + ")" + b + ")");
    };
    switch (in.kind) {
#define QB_COMPARE_EMIT(P)                         \
  case Kind::P##Lt: return line(a + " < " + b);    \
  case Kind::P##Le: return line(a + " <= " + b);   \
  case Kind::P##Gt: return line(a + " > " + b);    \
  case Kind::P##Ge: return line(a + " >= " + b);   \
  case Kind::P##Eq: return line(a + " == " + b);   \
  case Kind::P##Ne: return line(a + " != " + b);
#define QB_FLOAT_EMIT(P, T, SUF)                                      \
  case Kind::P##Add: return line(a + " + " + b);                      \
  case Kind::P##Sub: return line(a + " - " + b);                      \
  case Kind::P##Mul: return line(a + " * " + b);                      \
  case Kind::P##Div: return line(a + " / " + b);                      \
  case Kind::P##Neg: return line("-" + a);                            \
  case Kind::P##Abs: return line("fabs" SUF "(" + a + ")");           \
  case Kind::P##Sqrt: return line("sqrt" SUF "(" + a + ")");          \
  case Kind::P##Max: return line("qb_max" T "(" + a + ", " + b + ")"); \
  case Kind::P##Min: return line("qb_min" T "(" + a + ", " + b + ")"); \
  case Kind::P##Pow: return line("pow" SUF "(" + a + ", " + b + ")");  \
  case Kind::P##IsNan: return line("isnan(" + a + ") ? 1 : 0");        \
  case Kind::P##IsInf: return line("isinf(" + a + ") ? 1 : 0");        \
  case Kind::P##IsFinite: return line("isfinite(" + a + ") ? 1 : 0");  \
  QB_COMPARE_EMIT(P)
      QB_FLOAT_EMIT(F64, "d", "")
      QB_FLOAT_EMIT(F32, "f", "f")
#undef QB_FLOAT_EMIT
      case Kind::F64Vec:
        o << "    " << env_ << "->vec_f64(" << static_cast<int>(in.op) << ", &" << a << ", &" << d << ");\n";
        return;
      case Kind::F32Vec:
        o << "    " << env_ << "->vec_f32(" << static_cast<int>(in.op) << ", &" << a << ", &" << d << ");\n";
        return;
#define QB_INT_EMIT(P, U, S)                                   \
  case Kind::P##Add: return wrap(U, S, "+");                   \
  case Kind::P##Sub: return wrap(U, S, "-");                   \
  case Kind::P##Mul: return wrap(U, S, "*");                   \
  case Kind::P##Max: return line(a + " > " + b + " ? " + a + " : " + b); \
  case Kind::P##Min: return line(a + " < " + b + " ? " + a + " : " + b); \
  QB_COMPARE_EMIT(P)
      QB_INT_EMIT(I64, "uint64_t", "int64_t")
      QB_INT_EMIT(I32, "uint32_t", "int32_t")
#undef QB_INT_EMIT
#undef QB_COMPARE_EMIT
      case Kind::BoolNot: return line("!" + a);
      case Kind::BoolAnd: return line(a + " && " + b);
      case Kind::BoolOr: return line(a + " || " + b);
      case Kind::Select: return line(a + " ? " + b + " : " + c);
      case Kind::F64ToF32: return line("(float)" + a);
      case Kind::F32ToF64: return line("(double)" + a);
      case Kind::BoolToI32: case Kind::I64ToI32: return line("(int32_t)" + a);
      case Kind::BoolToI64: case Kind::I32ToI64: return line("(int64_t)" + a);
      case Kind::BoolToF32: case Kind::I32ToF32: case Kind::I64ToF32: return line("(float)" + a);
      case Kind::BoolToF64: case Kind::I32ToF64: case Kind::I64ToF64: return line("(double)" + a);
      case Kind::I32ToBool: case Kind::I64ToBool: case Kind::F32ToBool: case Kind::F64ToBool:
        return line("(" + a + " != 0)");
      case Kind::Call: {
        const auto& call = cur_->calls_[in.a];
        for (const auto& regs : call.in_regs)
          for (auto reg : regs)
            o << "    " << regs_ << "[" << reg << "]." << member(cur_->reg_dtype_[reg]) << " = " << reg_name(reg) << ";\n";
        o << "    " << env_ << "->call(" << env_ << "->ctx, " << in.a << ", " << regs_ << ");\n";
        for (const auto& regs : call.out_regs)
          for (auto reg : regs)
            o << "    " << reg_name(reg) << " = " << regs_ << "[" << reg << "]." << member(cur_->reg_dtype_[reg]) << ";\n";
        return;
      }
      case Kind::End:
        return;
    }
  }

  const ScalarBody* b_;
  const ScalarBody* cur_ = nullptr;
  char prefix_ = 'v';
  const char* env_ = "env";
  const char* regs_ = "r";
};

void* ScalarBody::native_function(const std::function<std::string()>& source,
                                  std::shared_ptr<const ScalarBody> also_keep) const {
  if (void* f = native_.load(std::memory_order_acquire)) return f;
  if (native_started_.exchange(true)) return nullptr;
  const std::string mode = jit_mode();
  if (mode == "0") return nullptr;
  std::string src = source();
  if (mode == "sync") {
    native_.store(build(src), std::memory_order_release);
    return native_.load(std::memory_order_acquire);
  }
  // The bodies are immutable; the thread holds them alive until it is done.
  std::thread([self = shared_from_this(), also_keep, src = std::move(src)]() {
    self->native_.store(build(src), std::memory_order_release);
  }).detach();
  return nullptr;
}

ScalarBody::NativeScan ScalarBody::native_scan(std::size_t nc, std::size_t nk) const {
  return reinterpret_cast<NativeScan>(native_function([&] { return NativeEmitter(*this).scan_source(nc, nk); }, nullptr));
}

ScalarBody::NativeWhile ScalarBody::native_while(const ScalarBody& cond, std::size_t nc) const {
  return reinterpret_cast<NativeWhile>(
      native_function([&] { return NativeEmitter(*this).while_source(cond, nc); }, cond.shared_from_this()));
}

bool ScalarBody::run_native_while(NativeWhile fn, const ScalarBody& cond, State& cs, State& bs,
                                  std::int64_t max_steps) const {
  CallContext cctx{&cond, &cs, nullptr}, bctx{this, &bs, nullptr};
  const NativeEnv cenv{qb_native_call, qb_native_vec_f64, qb_native_vec_f32, &cctx, cs.scratch.data(), cs.big_tmp.data()};
  const NativeEnv benv{qb_native_call, qb_native_vec_f64, qb_native_vec_f32, &bctx, bs.scratch.data(), bs.big_tmp.data()};
  const int done = fn(cs.regs.data(), bs.regs.data(), &cenv, &benv, max_steps);
  if (cctx.error) std::rethrow_exception(cctx.error);
  if (bctx.error) std::rethrow_exception(bctx.error);
  return done != 0;
}

void ScalarBody::run_native(NativeScan fn, State& s, std::int64_t first, std::int64_t last, std::int64_t len,
                            std::int64_t start, bool reverse, const std::byte* const* xs, std::byte* const* ys) const {
  CallContext ctx{this, &s, nullptr};
  const NativeEnv env{qb_native_call, qb_native_vec_f64, qb_native_vec_f32, &ctx, s.scratch.data(), s.big_tmp.data()};
  fn(s.regs.data(), &env, first, last, len, start, reverse ? 1 : 0, xs, ys);
  if (ctx.error) std::rethrow_exception(ctx.error);
}

}  // namespace qb::cpu
