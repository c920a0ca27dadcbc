#include "quabla/api/eager.h"

#include <mutex>
#include <unordered_map>

#include "quabla/api/functions.h"
#include "quabla/ir/errors.h"
#include "quabla/transforms/simplify.h"

namespace qb {

namespace {

struct Cache {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const cpu::Executable>> programs;
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: eager calls may run during interpreter exit
  return *c;
}

}  // namespace

void append_signature(std::string& key, std::span<const Array> args) {
  // Promotion reads the default dtypes (a weak Python number's dtype), so programs built
  // under qb.set_default_dtype(qb.float32) are cached apart.
  if (default_float_dtype() == DType::f32) key += "@f32";
  for (const Array& a : args) {
    key += '|';
    key += dtype_short_name(a.type.dtype);
    for (auto d : a.type.shape) {
      key += ',';
      key += std::to_string(d);
    }
    if (a.type.weak) key += '~';
  }
}

ValueId weak_result(Builder& b, ValueId v) {
  const ValueType& t = b.type(v);
  if (!t.weak) return v;
  const DType d = is_float(t.dtype) ? default_float_dtype() : is_int(t.dtype) ? default_int_dtype() : t.dtype;
  const ValueId r = d == t.dtype ? v : api::astype(b, v, d);
  b.graph().values[r].weak = true;
  return r;
}

std::shared_ptr<const cpu::Executable> eager_program(const std::string& key, std::span<const Array> args,
                                                     const BuildFn& build) {
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lk(c.mutex);
    auto it = c.programs.find(key);
    if (it != c.programs.end()) return it->second;
  }
  auto g = std::make_shared<Graph>();
  Builder b(*g);
  std::vector<ValueId> params;
  for (const Array& a : args) params.push_back(b.param(a.type));
  std::vector<ValueId> results = build(b, params);
  for (ValueId& r : results) r = weak_result(b, r);
  b.set_results(results);
  verify(*g);
  // The same pipeline as jit (simplify, then plan), so eager and jit cannot disagree.
  auto exe = std::make_shared<const cpu::Executable>(std::make_shared<const Graph>(simplify(*g)));
  std::lock_guard<std::mutex> lk(c.mutex);
  return c.programs.emplace(key, std::move(exe)).first->second;
}

std::vector<Array> run_program(const cpu::Executable& exe, std::span<const Array> args) {
  std::vector<BufferPtr> bufs;
  bufs.reserve(args.size());
  for (const Array& a : args) bufs.push_back(a.storage);
  auto outs = exe.run(bufs);
  const Graph& g = exe.graph();
  std::vector<Array> result;
  result.reserve(outs.size());
  for (std::size_t i = 0; i < outs.size(); ++i) {
    ValueType t = g.type(g.results[i]);  // weak where computed from weak values only
    Array a;
    a.storage = std::move(outs[i]);
    a.type = std::move(t);
    result.push_back(std::move(a));
  }
  return result;
}

std::vector<Array> trace_call(Trace& trace, std::span<const Array> args, const BuildFn& build) {
  std::vector<ValueId> params;
  params.reserve(args.size());
  for (const Array& a : args) params.push_back(trace.value_of(a));
  std::vector<Array> out;
  for (ValueId v : build(trace.builder, params)) out.push_back(trace.tracer(v));
  return out;
}

std::size_t eager_cache_size() {
  std::lock_guard<std::mutex> lk(cache().mutex);
  return cache().programs.size();
}

}  // namespace qb
