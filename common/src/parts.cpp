#include "cuda_streams/parts.hpp"

#include <cstdio>
#include <cstdlib>

#include "cuda_streams/options.hpp"

namespace cs {

Parts::Parts(Options& options, std::vector<Part> parts) : parts_(std::move(parts)) {
  std::vector<std::string> names{"all"};
  std::string help = "run one part of the lesson:";
  for (std::size_t i = 0; i < parts_.size(); ++i) {
    names.push_back(parts_[i].name);
    help += (i == 0 ? " " : "; ") + parts_[i].name + " (" + parts_[i].what + ")";
  }
  options.add_choice("part", &chosen_, names, help);
}

std::size_t Parts::index_of(const std::string& name) const {
  for (std::size_t i = 0; i < parts_.size(); ++i) {
    if (parts_[i].name == name) return i;
  }
  std::fprintf(stderr, "internal error: no part named '%s' was declared\n", name.c_str());
  std::abort();
}

bool Parts::selected(const std::string& name) const {
  const std::size_t index = index_of(name);
  return chosen_ == "all" || chosen_ == parts_[index].name;
}

bool Parts::begin(const std::string& name) const {
  if (!selected(name)) return false;
  const std::size_t index = index_of(name);
  std::printf("\n== Part %zu of %zu: %s: %s\n", index + 1, parts_.size(), name.c_str(),
              parts_[index].what.c_str());
  std::fflush(stdout);
  return true;
}

}  // namespace cs
