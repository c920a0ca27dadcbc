// Building generated source into a shared object with the system compiler, cached on disk:
// used by the loop compiler's tier 1 (C) and by the CUDA backend's host emulator (C++).
//
// Objects are cached under $QUABLA_CACHE_DIR (default $XDG_CACHE_HOME/quabla or
// ~/.cache/quabla)/<subdir>, keyed by a hash of the source, the compiler's identity and the
// flags. Writes are atomic (a private temporary, then rename), so concurrent processes are
// safe; an entry that fails to load is rebuilt; a cache directory that cannot be written
// falls back to a private temporary directory.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace qb::native {

struct Build {
  void* handle = nullptr;  // dlopen handle (kept open for the life of the process), or null
  std::string error;       // why there is none
  std::string path;        // the shared object
};

// Runs argv quietly (stdout and stderr captured into *output); true on exit status 0.
bool run_quietly(const std::vector<std::string>& argv, std::string* output = nullptr);
// The compiler's --version line, or empty when it does not run (cached per compiler).
std::string compiler_identity(const std::string& compiler);
std::uint64_t fnv1a(std::string_view s);
std::filesystem::path cache_dir();

// `extension`: ".c" or ".cc" (the language the compiler is given); `flags` split at spaces;
// `libs` appended after the output ("-lm").
Build build_shared_object(const std::string& source, const std::string& compiler, std::string_view flags,
                          std::string_view subdir, std::string_view extension, const std::vector<std::string>& libs);

}  // namespace qb::native
