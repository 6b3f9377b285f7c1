#include "testmodel/quantize.hpp"

#include <llama.h>

#include "util/error.hpp"

namespace clef::testmodel {

void quantize_backbone(const std::filesystem::path& path, const std::string& type) {
  llama_model_quantize_params params = llama_model_quantize_default_params();
  if (type == "F16") {
    params.ftype = LLAMA_FTYPE_MOSTLY_F16;
  } else if (type == "Q8_0") {
    params.ftype = LLAMA_FTYPE_MOSTLY_Q8_0;
  } else if (type == "Q4_K_M") {
    params.ftype = LLAMA_FTYPE_MOSTLY_Q4_K_M;
  } else {
    throw invalid_request("quantization " + type + ": expected F16, Q8_0 or Q4_K_M", "quant");
  }
  llama_backend_init();
  const std::filesystem::path out = path.string() + ".quantized";
  if (llama_model_quantize(path.c_str(), out.c_str(), &params) != 0) {
    std::error_code ec;
    std::filesystem::remove(out, ec);
    throw model_error("llama.cpp could not quantize " + path.string() + " to " + type);
  }
  std::filesystem::rename(out, path);
}

}  // namespace clef::testmodel
