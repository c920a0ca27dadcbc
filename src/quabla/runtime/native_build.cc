#include "quabla/runtime/native_build.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace qb::native {

namespace fs = std::filesystem;

bool run_quietly(const std::vector<std::string>& argv, std::string* output) {
  std::string cmd;
  for (const auto& a : argv) {
    cmd += "'";
    for (char c : a) cmd += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cmd += "' ";
  }
  cmd += "2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return false;
  char buf[512];
  std::string out;
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int status = ::pclose(p);
  if (output) *output = out;
  return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// (Process-lifetime objects here are never destroyed: a background build may still run
// while the process exits.)
std::string compiler_identity(const std::string& compiler) {
  static std::mutex mu;
  static auto* ids = new std::map<std::string, std::string>();
  {
    std::lock_guard lock(mu);
    if (auto it = ids->find(compiler); it != ids->end()) return it->second;
  }
  std::string out;
  std::string id = run_quietly({compiler, "--version"}, &out) ? out.substr(0, out.find('\n')) : std::string();
  std::lock_guard lock(mu);
  return ids->emplace(compiler, id).first->second;
}

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

fs::path cache_dir() {
  if (const char* v = std::getenv("QUABLA_CACHE_DIR"); v && *v) return fs::path(v);
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "quabla";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "quabla";
  return fs::temp_directory_path() / "quabla-cache";
}

namespace {

bool writable_dir(const fs::path& d) {
  std::error_code ec;
  fs::create_directories(d, ec);
  return fs::is_directory(d, ec) && ::access(d.c_str(), W_OK) == 0;
}

// Temporaries ("<key>.<pid>-<n>-<t>.c/.so") that a process killed mid-build left behind,
// once they are an hour old.
void remove_stale_temporaries(const fs::path& dir) {
  std::error_code ec;
  const auto cutoff = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (std::count(name.begin(), name.end(), '.') < 2) continue;  // "<key>.so" entries stay
    std::error_code e2;
    if (fs::last_write_time(it->path(), e2) < cutoff && !e2) fs::remove(it->path(), e2);
  }
}

// A directory this process may write: the cache's subdir, else a private temporary one.
// QUABLA_CACHE_DIR may change between builds (tests do), so it is read every time.
fs::path output_dir(std::string_view subdir) {
  static std::mutex mu;
  static auto* dirs = new std::map<std::string, fs::path>();  // (env, subdir) -> directory
  std::lock_guard<std::mutex> lock(mu);
  const char* env = std::getenv("QUABLA_CACHE_DIR");
  const std::string key = std::string(env ? env : "") + "\n" + std::string(subdir);
  if (auto it = dirs->find(key); it != dirs->end()) return it->second;
  const fs::path c = cache_dir() / std::string(subdir);
  fs::path dir;
  if (writable_dir(c)) {
    dir = c;
    remove_stale_temporaries(c);
  } else {
    std::string tmpl = (fs::temp_directory_path() / ("quabla-" + std::string(subdir) + "-XXXXXX")).string();
    dir = ::mkdtemp(tmpl.data()) ? fs::path(tmpl) : fs::path();
  }
  return dirs->emplace(key, dir).first->second;
}

std::string unique_suffix() {
  static std::atomic<unsigned> counter{0};
  return std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
         std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 100000);
}

Build opened(const fs::path& so) {
  Build b;
  b.path = so.string();
  b.handle = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!b.handle) {
    const char* e = ::dlerror();
    b.error = "cannot load " + b.path + (e ? std::string(": ") + e : std::string());
  }
  return b;
}

}  // namespace

Build build_shared_object(const std::string& source, const std::string& compiler, std::string_view flags,
                          std::string_view subdir, std::string_view extension, const std::vector<std::string>& libs) {
  Build none;
  const std::string id = compiler_identity(compiler);
  if (id.empty()) {
    none.error = "no working compiler (" + compiler + ")";
    return none;
  }
  const fs::path dir = output_dir(subdir);
  if (dir.empty()) {
    none.error = "no writable directory for compiled code";
    return none;
  }
  std::string all_libs;
  for (const auto& l : libs) all_libs += l + " ";
  char key[17];
  std::snprintf(key, sizeof key, "%016llx",
                static_cast<unsigned long long>(fnv1a(source + "\n" + id + "\n" + std::string(flags) + "\n" + compiler +
                                                      "\n" + all_libs)));
  const fs::path so = dir / (std::string(key) + ".so");
  std::error_code ec;
  if (fs::exists(so, ec)) {
    if (Build b = opened(so); b.handle) return b;
    fs::remove(so, ec);  // corrupt or foreign: rebuilt below
  }
  const std::string tmp = (dir / (std::string(key) + "." + unique_suffix())).string();
  const std::string src_path = tmp + std::string(extension);
  {
    std::ofstream out(src_path);
    out << source;
    if (!out) {
      none.error = "cannot write " + src_path;
      return none;
    }
  }
  std::vector<std::string> argv{compiler};
  std::istringstream split{std::string(flags)};
  for (std::string f; split >> f;) argv.push_back(f);
  argv.insert(argv.end(), {src_path, "-o", tmp + ".so"});
  argv.insert(argv.end(), libs.begin(), libs.end());
  std::string log;
  const bool ok = run_quietly(argv, &log);
  fs::remove(src_path, ec);
  if (!ok) {
    none.error = "the compiler failed: " + log.substr(0, 2000);
    fs::remove(tmp + ".so", ec);
    return none;
  }
  fs::rename(tmp + ".so", so, ec);  // atomic: readers see the old entry or the new one
  if (ec) return opened(tmp + ".so");  // the rename failed: use ours where it is
  return opened(so);
}

}  // namespace qb::native
