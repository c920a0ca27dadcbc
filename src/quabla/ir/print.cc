// The text form of a Graph, for tests, errors and `lower().as_text()`.
#include <sstream>

#include "quabla/ir/graph.h"

namespace qb {

namespace {

std::string literal_str(const Literal& lit) {
  std::ostringstream os;
  os.precision(17);
  const auto n = num_elements(lit.type.shape);
  os << (n == 1 ? "" : "[");
  for (std::int64_t i = 0; i < n && i < 8; ++i) {
    if (i) os << ", ";
    switch (lit.type.dtype) {
      case DType::f32: os << lit.data->as<float>()[i]; break;
      case DType::f64: os << lit.data->as<double>()[i]; break;
      case DType::bool_: os << (lit.data->as<std::uint8_t>()[i] ? "true" : "false"); break;
      case DType::i32: os << lit.data->as<std::int32_t>()[i]; break;
      case DType::i64: os << lit.data->as<std::int64_t>()[i]; break;
      case DType::i8: os << static_cast<int>(lit.data->as<std::int8_t>()[i]); break;
      case DType::i16: os << lit.data->as<std::int16_t>()[i]; break;
      case DType::u8: os << static_cast<unsigned>(lit.data->as<std::uint8_t>()[i]); break;
      case DType::u16: os << lit.data->as<std::uint16_t>()[i]; break;
      case DType::u32: os << lit.data->as<std::uint32_t>()[i]; break;
      case DType::c64: os << lit.data->as<float>()[2 * i] << (lit.data->as<float>()[2 * i + 1] < 0 ? "" : "+")
                          << lit.data->as<float>()[2 * i + 1] << "j"; break;
      case DType::c128: os << lit.data->as<double>()[2 * i] << (lit.data->as<double>()[2 * i + 1] < 0 ? "" : "+")
                           << lit.data->as<double>()[2 * i + 1] << "j"; break;
    }
  }
  if (n > 8) os << ", ...";
  os << (n == 1 ? "" : "]");
  return os.str();
}

void print_attrs(std::ostream& os, const Node& n) {
  const Attrs& a = n.attrs;
  switch (op_attr_kind(n.op)) {
    case AttrKind::None: break;
    case AttrKind::ParamIndex: os << " index=" << a.axis; break;
    case AttrKind::Literal: os << " value=" << literal_str(*a.literal); break;
    case AttrKind::DType: os << " dtype=" << dtype_short_name(a.dtype); break;
    case AttrKind::Shape: os << " shape=" << shape_str(a.shape); break;
    case AttrKind::Broadcast: os << " shape=" << shape_str(a.shape) << " dims=" << shape_str(a.dims); break;
    case AttrKind::Perm: os << " perm=" << shape_str(a.dims); break;
    case AttrKind::Axes: os << " axes=" << shape_str(a.dims); break;
    case AttrKind::Slice:
      os << " starts=" << shape_str(a.starts) << " limits=" << shape_str(a.limits) << " strides=" << shape_str(a.strides);
      break;
    case AttrKind::Pad:
      os << " low=" << shape_str(a.starts) << " high=" << shape_str(a.limits) << " interior=" << shape_str(a.strides);
      break;
    case AttrKind::Axis: os << " axis=" << a.axis; break;
    case AttrKind::Gather: os << " axis=" << a.axis << " indices=" << shape_str(a.dims) << " index_shape=" << shape_str(a.shape); break;
    case AttrKind::Take: os << " axis=" << a.axis << (a.mode ? " mode=fill" : " mode=clip"); break;
    case AttrKind::Scatter: {
      static constexpr const char* kinds[] = {"add", "set", "mul", "min", "max"};
      os << " axis=" << a.axis << " mode=" << (a.mode >= 0 && a.mode < 5 ? kinds[a.mode] : "?");
      break;
    }
    case AttrKind::Sort: os << " dtype=" << dtype_short_name(a.dtype) << (a.mode ? " mode=1" : ""); break;
    case AttrKind::Cumsum: os << " axis=" << a.axis << (a.reverse ? " reverse" : ""); break;
    case AttrKind::TriSolve:
      os << ((a.mode & 1) ? " lower" : " upper") << ((a.mode & 2) ? " transpose" : "") << ((a.mode & 4) ? " unit" : "");
      break;
    case AttrKind::Mode: os << " mode=" << a.mode; break;
    case AttrKind::Cond: break;
    case AttrKind::Scan:
      os << " length=" << a.length << " start=" << a.start << " consts=" << a.num_consts << " carry=" << a.num_carry
         << (a.reverse ? " reverse" : "");
      break;
    case AttrKind::While: os << " consts=" << a.num_consts; break;
    case AttrKind::Custom:
      os << " args=" << a.num_consts;
      if (a.mode) os << " policy=" << a.mode;
      break;
    case AttrKind::HostCall:
      os << " callback=" << a.mode;
      if (a.num_consts >= 0) os << " linear transpose=" << a.num_consts;
      if (a.num_carry & 3) os << " vmap=" << (a.num_carry & 3);
      if (a.num_carry & kHostCallEffect) os << " effect";
      if (a.length) os << " batch_axes=" << a.length;
      break;
    case AttrKind::NamedAxis: {
      static const char* kinds[] = {"sum", "max", "min", "all_gather", "axis_index", "ppermute"};
      os << " kind=" << (a.mode >= 0 && a.mode < 6 ? kinds[a.mode] : "?") << " axis_id=" << a.num_consts
         << " size=" << a.length;
      if (a.mode == kAxisGather) os << " axis=" << a.axis << (a.num_carry ? " tiled" : "");
      if (a.mode == kAxisPermute) {
        os << " perm=[";
        for (std::size_t i = 0; i + 1 < a.dims.size(); i += 2) os << (i ? ", " : "") << a.dims[i] << "->" << a.dims[i + 1];
        os << "]";
      }
      break;
    }
  }
}

void print_node_line(std::ostream& os, const Graph& g, const Node& n) {
  for (std::size_t i = 0; i < n.outputs.size(); ++i) os << (i ? ", " : "") << "%" << n.outputs[i];
  os << " = " << op_name(n.op) << "(";
  for (std::size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << "%" << n.inputs[i];
  os << ")";
  print_attrs(os, n);
  os << " :";
  for (auto v : n.outputs) os << " " << g.type(v).str();
}

void print_graph(std::ostream& os, const Graph& g, const std::string& indent) {
  os << "func(";
  for (std::size_t i = 0; i < g.params.size(); ++i) {
    os << (i ? ", " : "") << "%" << g.params[i] << ": " << g.type(g.params[i]).str();
  }
  os << ") -> (";
  for (std::size_t i = 0; i < g.results.size(); ++i) os << (i ? ", " : "") << g.type(g.results[i]).str();
  os << ") {\n";
  for (const Node& n : g.nodes) {
    if (n.op == Op::Parameter) continue;
    os << indent << "  ";
    print_node_line(os, g, n);
    os << "\n";
    for (const auto& region : n.regions) {
      os << indent << "    region ";
      print_graph(os, *region, indent + "    ");
    }
  }
  os << indent << "  return";
  for (std::size_t i = 0; i < g.results.size(); ++i) os << (i ? ", %" : " %") << g.results[i];
  os << "\n" << indent << "}\n";
}

}  // namespace

std::string print_node(const Graph& g, const Node& n) {
  std::ostringstream os;
  print_node_line(os, g, n);
  return os.str();
}

std::string print(const Graph& g) {
  std::ostringstream os;
  print_graph(os, g, "");
  return os.str();
}

}  // namespace qb
