#include "quabla/backends/cuda/nvrtc.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "quabla/backends/cuda/loader.h"
#include "quabla/ir/errors.h"
#include "quabla/runtime/native_build.h"

namespace qb::cuda {

namespace fs = std::filesystem;

std::string nvrtc_version(std::string* why) {
  const NvrtcApi* api = nvrtc(why);
  if (!api) return {};
  int major = 0, minor = 0;
  api->nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {

std::string compile_uncached(const NvrtcApi& api, const std::string& source, const std::string& arch, bool cubin) {
  void* prog = nullptr;
  if (int r = api.nvrtcCreateProgram(&prog, source.c_str(), "quabla.cu", 0, nullptr, nullptr); r != 0) {
    throw InternalError(std::string("nvrtcCreateProgram: ") + api.nvrtcGetErrorString(r));
  }
  const std::string arch_flag = "--gpu-architecture=" + arch;
  const char* options[] = {arch_flag.c_str(), "--fmad=false", "--prec-div=true", "--prec-sqrt=true",
                           "--ftz=false", "--std=c++17"};
  const int r = api.nvrtcCompileProgram(prog, static_cast<int>(std::size(options)), options);
  std::string ptx;
  if (r == 0 && cubin) {
    std::size_t n = 0;
    api.nvrtcGetCUBINSize(prog, &n);
    ptx.resize(n);
    if (n) api.nvrtcGetCUBIN(prog, ptx.data());
  } else if (r == 0) {
    std::size_t n = 0;
    api.nvrtcGetPTXSize(prog, &n);
    ptx.resize(n);
    api.nvrtcGetPTX(prog, ptx.data());
    if (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  } else {
    std::size_t n = 0;
    api.nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    api.nvrtcGetProgramLog(prog, log.data());
    api.nvrtcDestroyProgram(&prog);
    throw InternalError("NVRTC rejected generated CUDA code (" + std::string(api.nvrtcGetErrorString(r)) +
                        "): " + log.substr(0, 4000));
  }
  api.nvrtcDestroyProgram(&prog);
  return ptx;
}

}  // namespace

namespace {

std::string compile(const std::string& source, const std::string& arch, bool cubin) {
  std::string why;
  const NvrtcApi* api = nvrtc(&why);
  if (!api) throw ValueError("cannot compile CUDA kernels: " + why);
  const std::string version = nvrtc_version();
  char key[17];
  std::snprintf(key, sizeof key, "%016llx",
                static_cast<unsigned long long>(native::fnv1a(source + "\n" + version + "\n" + arch + (cubin ? "\ncubin" : ""))));
  static std::mutex mu;
  static auto* memory = new std::map<std::string, std::string>();
  {
    std::lock_guard lock(mu);
    if (auto it = memory->find(key); it != memory->end()) return it->second;
  }
  const fs::path dir = native::cache_dir() / "cuda";
  const fs::path file = dir / (std::string(key) + (cubin ? ".cubin" : ".ptx"));
  std::string ptx;
  if (std::ifstream in(file, std::ios::binary); in) {
    std::stringstream s;
    s << in.rdbuf();
    ptx = s.str();
  }
  if (ptx.empty()) {
    ptx = compile_uncached(*api, source, arch, cubin);
    std::error_code ec;
    fs::create_directories(dir, ec);
    const fs::path tmp = dir / (std::string(key) + "." + std::to_string(::getpid()) + ".tmp");
    if (std::ofstream out(tmp, std::ios::binary); out && out.write(ptx.data(), static_cast<std::streamsize>(ptx.size()))) {
      out.close();
      fs::rename(tmp, file, ec);  // atomic; a failure only costs a recompile next time
    }
    fs::remove(tmp, ec);
  }
  std::lock_guard lock(mu);
  return memory->emplace(key, ptx).first->second;
}

}  // namespace

std::string compile_ptx(const std::string& source, const std::string& arch) { return compile(source, arch, false); }
std::string compile_cubin(const std::string& source, const std::string& arch) { return compile(source, arch, true); }

}  // namespace qb::cuda
