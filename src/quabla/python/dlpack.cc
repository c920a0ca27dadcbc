// DLPack: Array.__dlpack__ / __dlpack_device__ and qb.from_dlpack, zero-copy both ways on
// the CPU. Exports are read-only views that keep the array's storage alive; imports wrap the
// producer's memory (Buffer::wrap) when it is contiguous, aligned and of a Quabla dtype, and
// copy otherwise (strided views, narrow or unsigned integers).
#include <nanobind/ndarray.h>

#include <cstring>

#include "quabla/api/eager.h"
#include "quabla/ir/errors.h"
#include "quabla/python/bindings.h"

namespace qb::py {

namespace {

using AnyArray = nb::ndarray<nb::ro>;

nb::dlpack::dtype dl_dtype(DType d) {
  switch (d) {
    case DType::f32: return nb::dtype<float>();
    case DType::f64: return nb::dtype<double>();
    case DType::i32: return nb::dtype<std::int32_t>();
    case DType::i64: return nb::dtype<std::int64_t>();
    case DType::bool_: return nb::dtype<bool>();
    case DType::c64: return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Complex), 64, 1};
    case DType::c128: return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Complex), 128, 1};
    case DType::i8: return nb::dtype<std::int8_t>();
    case DType::i16: return nb::dtype<std::int16_t>();
    case DType::u8: return nb::dtype<std::uint8_t>();
    case DType::u16: return nb::dtype<std::uint16_t>();
    case DType::u32: return nb::dtype<std::uint32_t>();
  }
  return nb::dtype<std::uint8_t>();
}

std::optional<DType> quabla_dtype(nb::dlpack::dtype t) {
  if (t.lanes != 1) return std::nullopt;
  using C = nb::dlpack::dtype_code;
  if (t.code == static_cast<std::uint8_t>(C::Float) && t.bits == 32) return DType::f32;
  if (t.code == static_cast<std::uint8_t>(C::Float) && t.bits == 64) return DType::f64;
  if (t.code == static_cast<std::uint8_t>(C::Complex) && t.bits == 64) return DType::c64;
  if (t.code == static_cast<std::uint8_t>(C::Complex) && t.bits == 128) return DType::c128;
  if (t.code == static_cast<std::uint8_t>(C::Int) && t.bits == 32) return DType::i32;
  if (t.code == static_cast<std::uint8_t>(C::Int) && t.bits == 64) return DType::i64;
  if (t.code == static_cast<std::uint8_t>(C::Int) && t.bits == 8) return DType::i8;
  if (t.code == static_cast<std::uint8_t>(C::Int) && t.bits == 16) return DType::i16;
  if (t.code == static_cast<std::uint8_t>(C::UInt) && t.bits == 8) return DType::u8;
  if (t.code == static_cast<std::uint8_t>(C::UInt) && t.bits == 16) return DType::u16;
  if (t.code == static_cast<std::uint8_t>(C::UInt) && t.bits == 32) return DType::u32;
  if (t.code == static_cast<std::uint8_t>(C::Bool) && t.bits == 8) return DType::bool_;
  return std::nullopt;
}

// A read-only nanobind array-API object viewing a concrete array (it holds a reference to
// the storage); its own __dlpack__ answers the consumer, with a versioned capsule that
// carries DLPack's read-only flag when the consumer asks for one.
nb::object export_view(const Array& a, bool copy) {
  a.require_concrete("DLPack export (__dlpack__, np.from_dlpack, torch.from_dlpack)");
  BufferPtr storage = a.storage;
  if (copy) {
    storage = Buffer::allocate(a.storage->nbytes());
    std::memcpy(storage->data(), a.storage->data(), a.storage->nbytes());
  }
  auto* keep = new BufferPtr(storage);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<BufferPtr*>(p); });
  std::vector<std::size_t> shape(a.shape().begin(), a.shape().end());
  if (copy) {  // the consumer's own copy: writable
    nb::ndarray<nb::array_api> mine(storage->data(), shape.size(), shape.data(), owner, nullptr,
                                    dl_dtype(a.dtype()), nb::device::cpu::value, 0);
    return nb::cast(mine, nb::rv_policy::reference);
  }
  nb::ndarray<nb::array_api, nb::ro> view(storage->data(), shape.size(), shape.data(), owner, nullptr,
                                          dl_dtype(a.dtype()), nb::device::cpu::value, 0);
  return nb::cast(view, nb::rv_policy::reference);
}

bool contiguous(const AnyArray& x) {
  std::int64_t expected = 1;
  for (std::size_t i = x.ndim(); i-- > 0;) {
    if (x.shape(i) != 1 && x.stride(i) != expected) return false;
    expected *= static_cast<std::int64_t>(x.shape(i));
  }
  return true;
}

}  // namespace

void bind_dlpack(nb::module_& m, nb::class_<Array>& cls) {
  // copy=True exports a fresh copy (the consumer may write it); otherwise a view of the
  // immutable storage, read-only for consumers that read DLPack's flags (max_version >= 1).
  cls.def("__dlpack__", [](const Array& a, nb::handle stream, nb::handle max_version, nb::handle dl_device,
                           nb::handle copy) {
    if (!stream.is_none() && !(PyLong_Check(stream.ptr()) && nb::cast<long>(stream) == -1)) {
      throw ValueError("__dlpack__: Quabla arrays live on the CPU, where stream must be None");
    }
    if (!dl_device.is_none()) {
      nb::tuple dev = nb::borrow<nb::tuple>(dl_device);
      if (nb::cast<int>(dev[0]) != 1) throw ValueError("__dlpack__: only the CPU device (1, 0) is available");
    }
    const bool want_copy = !copy.is_none() && nb::cast<bool>(copy);
    nb::object view = export_view(a, want_copy);
    nb::dict kw;
    if (!max_version.is_none()) kw["max_version"] = max_version;
    return view.attr("__dlpack__")(**kw);
  }, nb::kw_only(), nb::arg("stream").none() = nb::none(), nb::arg("max_version").none() = nb::none(),
     nb::arg("dl_device").none() = nb::none(), nb::arg("copy").none() = nb::none());
  cls.def("__dlpack_device__", [](const Array&) { return nb::make_tuple(1, 0); });  // (kDLCPU, 0)

  m.def("from_dlpack", [](nb::handle obj, nb::handle device, nb::handle copy) -> nb::object {
    if (nb::isinstance<Array>(obj)) return nb::borrow(obj);
    if (!device.is_none() && !(nb::isinstance<nb::str>(device) && nb::cast<std::string>(device) == "cpu")) {
      throw ValueError("from_dlpack: Quabla arrays live on the CPU; device must be None or 'cpu'");
    }
    if (nb::hasattr(obj, "__dlpack_device__")) {
      nb::tuple dev = nb::borrow<nb::tuple>(obj.attr("__dlpack_device__")());
      if (nb::cast<int>(dev[0]) != 1) {
        throw ValueError("from_dlpack: the array lives on DLPack device type " + std::to_string(nb::cast<int>(dev[0])) +
                         ", not the CPU; move it to the host first (for example .cpu() in PyTorch)");
      }
    }
    AnyArray x;
    try {
      x = nb::cast<AnyArray>(obj);
    } catch (const nb::cast_error&) {
      throw TypeError(std::string("from_dlpack: expected an object with __dlpack__ (or the buffer protocol), got ") +
                      nb::type_name(obj.type()).c_str());
    }
    const auto dt = quabla_dtype(x.dtype());
    const bool want_copy = !copy.is_none() && nb::cast<bool>(copy);
    const auto addr = reinterpret_cast<std::uintptr_t>(x.data());
    if (!dt || want_copy || !contiguous(x) || addr % itemsize(*dt) != 0) {
      if (!copy.is_none() && !nb::cast<bool>(copy)) {
        throw ValueError("from_dlpack: copy=False, but this array needs a copy (a strided view, a misaligned "
                         "pointer or a dtype Quabla does not have)");
      }
      nb::object np = nb::module_::import_("numpy");  // the general path: NumPy reads any layout
      return nb::cast(to_array(np.attr("from_dlpack")(obj)));
    }
    Shape shape;
    for (std::size_t i = 0; i < x.ndim(); ++i) shape.push_back(static_cast<std::int64_t>(x.shape(i)));
    check_shape(shape, "from_dlpack", /*allow_zero=*/true);
    const std::size_t nbytes = static_cast<std::size_t>(num_elements(shape)) * itemsize(*dt);
    // The producer's memory stays alive while any array or view uses it; releasing it may
    // run Python code (the producer's deleter), so it takes the GIL.
    std::shared_ptr<void> owner(new AnyArray(x), [](void* p) {
      if (!Py_IsInitialized()) return;  // at exit: leave it to the process
      nb::gil_scoped_acquire gil;
      delete static_cast<AnyArray*>(p);
    });
    Array a;
    a.storage = Buffer::wrap(static_cast<std::byte*>(const_cast<void*>(x.data())), nbytes, std::move(owner));
    a.type = ValueType{*dt, std::move(shape), false};
    return nb::cast(a);
  }, nb::arg("x"), nb::kw_only(), nb::arg("device").none() = nb::none(), nb::arg("copy").none() = nb::none());
}

}  // namespace qb::py
