// A C interface to ExecuTorch's runtime (libexecutorch and its kernel and XNNPACK libraries, as the executorch
// wheel ships them for aarch64) for edgebert's emulated ARM64 child (edgebert/arm64_child.py), which loads it with
// ctypes: the wheel's Python bindings link libtorch, whose aarch64 PyPI build is a CUDA one; this needs no torch.
// Built by scripts/install_arm64.sh with Debian's aarch64 cross compiler against the wheel's headers and libraries.
//   ebet_load(path, err, n)        -> handle (the program's `forward` loaded), or null with the reason in `err`
//   ebet_run(h, count, datas, dtypes, ranks, shapes, err, n) -> 0, or -1 with the reason in `err`
//   ebet_outputs(h)                -> the number of outputs of the last run
//   ebet_output_info(h, i, dtype, rank, shape[8]); ebet_output_copy(h, i, dst, nbytes); ebet_free(h)
// dtypes are ExecuTorch ScalarType codes (Byte 0, Char 1, Int 3, Long 4, Half 5, Float 6, Bool 11).
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor_ptr.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using executorch::aten::ScalarType;
using executorch::extension::Module;
using executorch::extension::TensorPtr;
using executorch::runtime::EValue;

namespace {

struct Handle {
  std::unique_ptr<Module> module;
  std::vector<EValue> outputs;
};

void say(char* err, int n, const std::string& what) {
  if (err && n > 0) {
    std::strncpy(err, what.c_str(), n - 1);
    err[n - 1] = '\0';
  }
}

}  // namespace

extern "C" {

void* ebet_load(const char* path, char* err, int n) {
  auto handle = std::make_unique<Handle>();
  handle->module = std::make_unique<Module>(path, Module::LoadMode::File);
  auto loaded = handle->module->load_method("forward");
  if (loaded != executorch::runtime::Error::Ok) {
    say(err, n, "loading forward failed: error " + std::to_string(static_cast<int>(loaded)));
    return nullptr;
  }
  return handle.release();
}

int ebet_run(void* h, int count, void** datas, const int* dtypes, const int* ranks, const int64_t* shapes, char* err, int n) {
  auto* handle = static_cast<Handle*>(h);
  std::vector<TensorPtr> tensors;
  std::vector<EValue> inputs;
  const int64_t* shape = shapes;
  for (int i = 0; i < count; ++i) {
    std::vector<executorch::aten::SizesType> sizes(shape, shape + ranks[i]);
    shape += ranks[i];
    tensors.push_back(executorch::extension::make_tensor_ptr(std::move(sizes), datas[i], static_cast<ScalarType>(dtypes[i])));
    inputs.emplace_back(*tensors.back());
  }
  auto result = handle->module->execute("forward", inputs);
  if (!result.ok()) {
    say(err, n, "forward failed: error " + std::to_string(static_cast<int>(result.error())));
    return -1;
  }
  handle->outputs = std::move(result.get());
  for (const auto& value : handle->outputs) {
    if (!value.isTensor()) {
      say(err, n, "forward returned a value that is not a tensor");
      return -1;
    }
  }
  return 0;
}

int ebet_outputs(void* h) { return static_cast<int>(static_cast<Handle*>(h)->outputs.size()); }

int ebet_output_info(void* h, int i, int* dtype, int* rank, int64_t* shape) {
  const auto& tensor = static_cast<Handle*>(h)->outputs.at(i).toTensor();
  *dtype = static_cast<int>(tensor.scalar_type());
  *rank = static_cast<int>(tensor.dim());
  if (*rank > 8) return -1;
  for (int d = 0; d < *rank; ++d) shape[d] = tensor.size(d);
  return 0;
}

int ebet_output_copy(void* h, int i, void* dst, size_t nbytes) {
  const auto& tensor = static_cast<Handle*>(h)->outputs.at(i).toTensor();
  if (tensor.nbytes() != nbytes) return -1;
  std::memcpy(dst, tensor.const_data_ptr(), nbytes);
  return 0;
}

void ebet_free(void* h) { delete static_cast<Handle*>(h); }

}  // extern "C"
