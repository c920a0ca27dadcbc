// Type inference of the region ops (cond, scan, while): a region's parameters must be the
// types the node binds to them and its results what the node returns, so a node whose
// bodies disagree with its operands is ill-typed here, before anything runs.
#include <string>

#include "quabla/ir/errors.h"
#include "quabla/ir/infer.h"
#include "quabla/ir/regions.h"

namespace qb {

namespace {

[[noreturn]] void fail(Op op, const std::string& msg) { throw ValueError(std::string(op_name(op)) + ": " + msg); }

bool same(const ValueType& a, const ValueType& b) { return a.dtype == b.dtype && a.shape == b.shape; }

void expect_params(Op op, const char* region, const Graph& g, const std::vector<ValueType>& want) {
  if (g.params.size() != want.size()) {
    fail(op, std::string(region) + " takes " + std::to_string(g.params.size()) + " parameters, the node binds " +
                 std::to_string(want.size()));
  }
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!same(g.type(g.params[i]), want[i])) {
      fail(op, std::string(region) + " parameter " + std::to_string(i) + " is " + g.type(g.params[i]).str() +
                   ", the node binds " + want[i].str());
    }
  }
}

void expect_counts(Op op, std::size_t n, std::int64_t consts, std::int64_t carry) {
  if (consts < 0 || carry < 0 || static_cast<std::size_t>(consts + carry) > n) {
    fail(op, "operand layout consts=" + std::to_string(consts) + " carry=" + std::to_string(carry) + " exceeds " +
                 std::to_string(n) + " operands");
  }
}

}  // namespace

std::vector<ValueType> infer_region_types(Op op, std::span<const ValueType> in, const Attrs& a,
                                          const Regions& regions) {
  std::vector<ValueType> ins(in.begin(), in.end());
  for (auto& t : ins) t.weak = false;
  switch (op) {
    case Op::Cond: {
      if (regions.size() != 2) fail(op, "needs two regions (false branch, true branch)");
      if (ins.empty() || ins[0].dtype != DType::bool_ || !ins[0].shape.empty()) {
        fail(op, "the predicate must be a bool scalar, got " + (ins.empty() ? std::string("nothing") : ins[0].str()));
      }
      const std::vector<ValueType> operands(ins.begin() + 1, ins.end());
      expect_params(op, "false branch", *regions[0], operands);
      expect_params(op, "true branch", *regions[1], operands);
      auto f = result_types(*regions[0]), t = result_types(*regions[1]);
      if (f.size() != t.size()) fail(op, "branches return " + std::to_string(f.size()) + " and " + std::to_string(t.size()) + " values");
      for (std::size_t i = 0; i < f.size(); ++i)
        if (!same(f[i], t[i])) fail(op, "branch result " + std::to_string(i) + " is " + f[i].str() + " and " + t[i].str());
      return f;
    }
    case Op::Scan: {
      if (regions.size() != 1) fail(op, "needs one region (the body)");
      expect_counts(op, ins.size(), a.num_consts, a.num_carry);
      if (a.length < 0) fail(op, "negative length");
      const auto nc = static_cast<std::size_t>(a.num_consts), nk = static_cast<std::size_t>(a.num_carry);
      std::vector<ValueType> want{ValueType{DType::f64, {}, false}};
      want.insert(want.end(), ins.begin(), ins.begin() + static_cast<std::ptrdiff_t>(nc + nk));
      for (std::size_t i = nc + nk; i < ins.size(); ++i) {
        if (ins[i].shape.empty() || ins[i].shape[0] != a.length) {
          fail(op, "xs operand " + ins[i].str() + " needs a leading axis of the length " + std::to_string(a.length));
        }
        want.push_back(ValueType{ins[i].dtype, Shape(ins[i].shape.begin() + 1, ins[i].shape.end()), false});
      }
      const Graph& body = *regions[0];
      expect_params(op, "body", body, want);
      auto res = result_types(body);
      if (res.size() < nk) fail(op, "body returns fewer values than the carry has");
      std::vector<ValueType> out;
      for (std::size_t k = 0; k < nk; ++k) {
        if (!same(res[k], ins[nc + k])) fail(op, "body turns carry " + std::to_string(k) + " from " + ins[nc + k].str() + " into " + res[k].str());
        out.push_back(ins[nc + k]);
      }
      for (std::size_t j = nk; j < res.size(); ++j) {
        Shape s{a.length};
        s.insert(s.end(), res[j].shape.begin(), res[j].shape.end());
        out.push_back(ValueType{res[j].dtype, std::move(s), false});
      }
      return out;
    }
    case Op::CustomJvp: {
      if (regions.size() != 2) fail(op, "needs two regions (primal, rule)");
      if (a.num_consts < 0 || a.num_consts > static_cast<std::int64_t>(ins.size())) fail(op, "bad argument count");
      expect_params(op, "primal", *regions[0], ins);
      std::vector<ValueType> rule_params(ins.begin(), ins.end());
      for (std::int64_t i = 0; i < a.num_consts; ++i)
        if (is_inexact(ins[static_cast<std::size_t>(i)].dtype)) rule_params.push_back(ins[static_cast<std::size_t>(i)]);
      auto res = result_types(*regions[0]);
      if (a.mode & 1) rule_params.insert(rule_params.end(), res.begin(), res.end());
      expect_params(op, "rule", *regions[1], rule_params);
      std::vector<ValueType> want = res;
      for (const auto& r : res)
        if (is_inexact(r.dtype)) want.push_back(r);
      auto rule_res = result_types(*regions[1]);
      if (rule_res.size() != want.size()) {
        fail(op, "the rule returns " + std::to_string(rule_res.size()) + " values, expected " +
                     std::to_string(want.size()) + " (the outputs, then a tangent per float output)");
      }
      for (std::size_t k = 0; k < want.size(); ++k)
        if (!same(rule_res[k], want[k])) fail(op, "rule result " + std::to_string(k) + " is " + rule_res[k].str() + ", expected " + want[k].str());
      return res;
    }
    case Op::Checkpoint:
      if (regions.size() != 1) fail(op, "needs one region (the body)");
      expect_params(op, "body", *regions[0], ins);
      return result_types(*regions[0]);
    case Op::CustomVjp: {
      if (regions.size() != 3) fail(op, "needs three regions (primal, fwd, bwd)");
      if (a.num_consts < 0 || a.num_consts > static_cast<std::int64_t>(ins.size()) || a.num_carry < 0) {
        fail(op, "bad argument or residual count");
      }
      expect_params(op, "primal", *regions[0], ins);
      expect_params(op, "fwd", *regions[1], ins);
      auto res = result_types(*regions[0]);
      auto fwd = result_types(*regions[1]);
      const auto nres = static_cast<std::size_t>(a.num_carry);
      if (fwd.size() != res.size() + nres) fail(op, "fwd returns the wrong number of values");
      for (std::size_t k = 0; k < res.size(); ++k)
        if (!same(fwd[k], res[k])) fail(op, "fwd output " + std::to_string(k) + " is " + fwd[k].str() + ", expected " + res[k].str());
      std::vector<ValueType> bwd_params(fwd.begin() + static_cast<std::ptrdiff_t>(res.size()), fwd.end());
      for (const auto& r : res)
        if (is_inexact(r.dtype)) bwd_params.push_back(r);
      bwd_params.insert(bwd_params.end(), ins.begin(), ins.end());
      expect_params(op, "bwd", *regions[2], bwd_params);
      auto bwd = result_types(*regions[2]);
      std::vector<ValueType> want;
      for (std::int64_t i = 0; i < a.num_consts; ++i)
        if (is_inexact(ins[static_cast<std::size_t>(i)].dtype)) want.push_back(ins[static_cast<std::size_t>(i)]);
      if (bwd.size() != want.size()) fail(op, "bwd returns the wrong number of cotangents");
      for (std::size_t k = 0; k < want.size(); ++k)
        if (!same(bwd[k], want[k])) fail(op, "bwd cotangent " + std::to_string(k) + " is " + bwd[k].str() + ", expected " + want[k].str());
      return res;
    }
    case Op::LinearSolve: {
      if (regions.size() != 4) fail(op, "needs four regions (solve, transpose_solve, matvec, vecmat)");
      const auto nb = static_cast<std::size_t>(a.num_consts);
      if (nb == 0 || nb > ins.size()) fail(op, "bad vector operand count");
      std::vector<ValueType> out;
      for (std::size_t k = 0; k < nb; ++k) {
        ValueType t = ins[k];
        t.weak = false;
        if (!is_float(t.dtype)) fail(op, "the right-hand side must be floating point, got " + t.str());
        out.push_back(std::move(t));
      }
      static constexpr const char* kNames[] = {"solve", "transpose_solve", "matvec", "vecmat"};
      const auto solve_res = result_types(*regions[0]);
      if (solve_res.size() < nb) fail(op, "solve returns fewer values than b has leaves");
      const std::size_t naux = solve_res.size() - nb;
      for (std::size_t k = nb; k < solve_res.size(); ++k) out.push_back(solve_res[k]);
      for (std::size_t r = 0; r < 4; ++r) {
        expect_params(op, kNames[r], *regions[r], ins);
        auto res = result_types(*regions[r]);
        const std::size_t want = r < 2 ? nb + naux : nb;
        if (res.size() != want) fail(op, std::string(kNames[r]) + " returns " + std::to_string(res.size()) + " values, expected " + std::to_string(want));
        for (std::size_t k = 0; k < want; ++k)
          if (!same(res[k], out[k])) fail(op, std::string(kNames[r]) + " result " + std::to_string(k) + " is " + res[k].str() + ", expected " + out[k].str() + " (the operator must be square: x has b's structure)");
      }
      return out;
    }
    case Op::CustomVjpLin: {
      if (regions.size() != 1) fail(op, "needs one region (bwd)");
      const auto nl = static_cast<std::size_t>(a.num_consts), nres = static_cast<std::size_t>(a.num_carry);
      if (nl > ins.size() || nres > nl) fail(op, "bad operand counts");
      const Graph& bwd = *regions[0];
      auto params = param_types(bwd);
      if (params.size() < nl) fail(op, "bwd has too few parameters");
      const std::size_t ncts = params.size() - nl;
      std::vector<ValueType> want(ins.begin(), ins.begin() + static_cast<std::ptrdiff_t>(nres));
      std::vector<ValueType> out(params.begin() + static_cast<std::ptrdiff_t>(nres),
                                 params.begin() + static_cast<std::ptrdiff_t>(nres + ncts));
      want.insert(want.end(), out.begin(), out.end());
      want.insert(want.end(), ins.begin() + static_cast<std::ptrdiff_t>(nres), ins.begin() + static_cast<std::ptrdiff_t>(nl));
      expect_params(op, "bwd", bwd, want);
      auto cts = result_types(bwd);
      if (cts.size() != ins.size() - nl) fail(op, "bwd returns a cotangent per tangent operand");
      for (std::size_t k = 0; k < cts.size(); ++k)
        if (!same(cts[k], ins[nl + k])) fail(op, "bwd cotangent " + std::to_string(k) + " is " + cts[k].str() + ", expected " + ins[nl + k].str());
      return out;
    }
    case Op::While: {
      if (regions.size() != 2) fail(op, "needs two regions (cond, body)");
      expect_counts(op, ins.size(), a.num_consts, static_cast<std::int64_t>(ins.size()) - a.num_consts);
      expect_params(op, "cond", *regions[0], ins);
      expect_params(op, "body", *regions[1], ins);
      auto c = result_types(*regions[0]);
      if (c.size() != 1 || c[0].dtype != DType::bool_ || !c[0].shape.empty()) fail(op, "cond must return one bool scalar");
      auto res = result_types(*regions[1]);
      const std::vector<ValueType> carry(ins.begin() + a.num_consts, ins.end());
      if (res.size() != carry.size()) fail(op, "body returns " + std::to_string(res.size()) + " values for a carry of " + std::to_string(carry.size()));
      for (std::size_t k = 0; k < carry.size(); ++k)
        if (!same(res[k], carry[k])) fail(op, "body turns carry " + std::to_string(k) + " from " + carry[k].str() + " into " + res[k].str());
      return carry;
    }
    default:
      break;
  }
  throw InternalError("infer_region_types: not a region op");
}

}  // namespace qb
