#include "artifact/layout_writer.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "artifact/head_names.hpp"
#include "artifact/reference.hpp"
#include "gguf/copy_keys.hpp"
#include "gguf/gguf_file.hpp"
#include "head/head_parameters.hpp"
#include "util/error.hpp"

namespace clef::artifact {

namespace {

struct FileClose {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};

/// One tensor of the output: header in `ctx`, data either in memory or in the source file.
struct OutTensor {
  ggml_tensor* info = nullptr;
  std::vector<char> data;           ///< head tensors
  std::uint64_t source_offset = 0;  ///< backbone tensors (data empty)
};

class Writer {
 public:
  Writer(std::size_t max_tensors)
      : gguf_(gguf_init_empty()),
        ctx_(ggml_init({ggml_tensor_overhead() * (max_tensors + 8), nullptr, true})) {
    if (!gguf_ || !ctx_) throw std::runtime_error("cannot allocate a GGUF writer context");
  }
  gguf_context* kv() { return gguf_.get(); }

  void add_copied(const gguf::TensorRef& t) {
    OutTensor o;
    o.info = header(t.name, t.type, t.ne);
    o.source_offset = t.offset;
    tensors_.push_back(std::move(o));
  }

  /// Adds `values` (ggml order, ne) converted to `type`.
  void add_values(const std::string& name, std::array<std::int64_t, 4> ne, ggml_type type,
                  const std::vector<float>& values) {
    OutTensor o;
    o.info = header(name, type, ne);
    o.data.resize(ggml_nbytes(o.info));
    const std::int64_t n_per_row = ne[0];
    const std::int64_t rows = static_cast<std::int64_t>(values.size()) / n_per_row;
    ggml_quantize_chunk(type, values.data(), o.data.data(), 0, rows, n_per_row, nullptr);
    tensors_.push_back(std::move(o));
  }

  void write(const std::filesystem::path& out, const std::filesystem::path& source) const {
    const std::filesystem::path tmp = out.string() + ".tmp";
    {
      std::unique_ptr<std::FILE, FileClose> f(std::fopen(tmp.c_str(), "wb"));
      if (!f) throw std::runtime_error("cannot write " + tmp.string());
      std::vector<char> meta(gguf_get_meta_size(gguf_.get()));
      gguf_get_meta_data(gguf_.get(), meta.data());
      put(f.get(), meta.data(), meta.size(), tmp);
      std::ifstream in(source, std::ios::binary);
      std::vector<char> chunk(std::size_t{16} << 20);
      const std::size_t align = gguf_get_alignment(gguf_.get());
      const std::vector<char> zeros(align, 0);
      for (const auto& t : tensors_) {
        const std::size_t n = ggml_nbytes(t.info);
        if (!t.data.empty()) {
          put(f.get(), t.data.data(), n, tmp);
        } else {
          in.seekg(static_cast<std::streamoff>(t.source_offset));
          for (std::size_t done = 0; done < n;) {
            const std::size_t k = std::min(chunk.size(), n - done);
            if (!in.read(chunk.data(), static_cast<std::streamsize>(k))) {
              throw std::runtime_error("cannot read " + source.string());
            }
            put(f.get(), chunk.data(), k, tmp);
            done += k;
          }
        }
        put(f.get(), zeros.data(), (align - n % align) % align, tmp);
      }
      if (std::fflush(f.get()) != 0) throw std::runtime_error("cannot write " + tmp.string());
    }
    std::filesystem::rename(tmp, out);
  }

 private:
  ggml_tensor* header(const std::string& name, ggml_type type, std::array<std::int64_t, 4> ne) {
    if (ne[0] % ggml_blck_size(type) != 0) {
      throw model_error("tensor " + name + " has rows of " + std::to_string(ne[0]) +
                        " values, not a multiple of the " + ggml_type_name(type) + " block size");
    }
    ggml_tensor* t = ggml_new_tensor(ctx_.get(), type, GGML_MAX_DIMS, ne.data());
    ggml_set_name(t, name.c_str());
    gguf_add_tensor(gguf_.get(), t);
    return t;
  }
  static void put(std::FILE* f, const void* p, std::size_t n, const std::filesystem::path& path) {
    if (n > 0 && std::fwrite(p, 1, n, f) != n) {
      throw std::runtime_error("cannot write " + path.string());
    }
  }

  gguf::GgufContextPtr gguf_;
  gguf::GgmlContextPtr ctx_;
  std::vector<OutTensor> tensors_;
};

std::array<std::int64_t, 4> ne_of(const std::vector<std::int64_t>& shape) {
  std::array<std::int64_t, 4> ne{1, 1, 1, 1};
  for (std::size_t i = 0; i < shape.size(); ++i) ne[i] = shape[shape.size() - 1 - i];
  return ne;
}

void add_llama_cpp_head(Writer& w, const head::HeadWeights& h, ggml_type matrix_type) {
  const head::HeadConfig& c = h.config();
  for (const auto& name : llama_cpp_head_names(c)) {
    const head::HeadTensor& t = h.at(name.torch);
    const bool matrix = t.shape.size() == 2;
    if (name.gguf.size() == 1) {
      // The scorer's output weight (torch [1, W]) is written 1-D and stays BF16: llama-quantize
      // keeps 1-D tensors (notes section 2.2).
      if (name.torch == "residual_scorer.3.weight") {
        w.add_values(name.gguf[0], {c.width, 1, 1, 1}, GGML_TYPE_BF16, t.values);
        continue;
      }
      w.add_values(name.gguf[0], ne_of(t.shape), matrix ? matrix_type : GGML_TYPE_F32, t.values);
      continue;
    }
    std::vector<std::int64_t> part = t.shape;
    part[0] /= 3;
    const std::size_t n = t.values.size() / 3;
    for (std::size_t k = 0; k < 3; ++k) {
      std::vector<float> piece(t.values.begin() + static_cast<std::ptrdiff_t>(k * n),
                               t.values.begin() + static_cast<std::ptrdiff_t>((k + 1) * n));
      w.add_values(name.gguf[k], ne_of(part), matrix ? matrix_type : GGML_TYPE_F32, piece);
    }
  }
  const head::FoldedScales f =
      head::fold_scales(h.at("prior_logit_scale").values.at(0),
                        h.at("joint_logit_scale").values.at(0), h.at("residual_gate").values.at(0));
  w.add_values(std::string(kScalesTensor), {3, 1, 1, 1}, GGML_TYPE_F32, {f.prior, f.joint, f.gate});
}

void add_torch_named_head(Writer& w, const head::HeadWeights& h) {
  for (const auto& s : head::head_parameter_specs(h.config())) {
    w.add_values(std::string(kTorchPrefix) + s.name, ne_of(s.shape), GGML_TYPE_F32,
                 h.at(s.name).values);
  }
}

}  // namespace

void write_layout(const ModelPaths& source, Layout target, const std::filesystem::path& out,
                  ggml_type head_matrix_type) {
  if (target != Layout::llama_cpp && target != Layout::ollama) {
    throw invalid_request(
        "write_layout writes layout B or C, not " + std::string(layout_letter(target)), "layout");
  }
  switch (head_matrix_type) {
    case GGML_TYPE_F32:
    case GGML_TYPE_F16:
    case GGML_TYPE_BF16:
    case GGML_TYPE_Q8_0:
    case GGML_TYPE_Q4_0:
    case GGML_TYPE_Q5_0:
    case GGML_TYPE_Q6_K:
      break;
    default:
      throw invalid_request(std::string("head matrices cannot be written as ") +
                                ggml_type_name(head_matrix_type) +
                                " (F32, F16, BF16, Q8_0, Q4_0, Q5_0 or Q6_K)",
                            "head_matrix_type");
  }
  const OpenedModel a = open_model(source);
  if (a.layout != Layout::hf_head) {
    throw model_error(source.gguf.string() + " is not a layout A model");
  }
  const head::HeadWeights& h = a.head;
  const head::HeadConfig& c = h.config();
  const gguf::GgufFile g(source.gguf);
  const auto backbone = g.tensors();
  Writer w(backbone.size() + 200);
  const gguf_context* in = g.raw();
  for (std::int64_t i = 0; i < gguf_get_n_kv(in); ++i) {
    const std::string key = gguf_get_key(in, i);
    if (key == "general.alignment") continue;
    if (target == Layout::llama_cpp && key == "general.architecture") {
      gguf_set_val_str(w.kv(), "general.architecture", "clef");
    } else if (target == Layout::llama_cpp && key.starts_with("qwen35.")) {
      gguf::copy_kv(w.kv(), in, i, "clef." + key.substr(7));
    } else {
      gguf::copy_kv(w.kv(), in, i, key);
    }
  }
  for (const auto& t : backbone) w.add_copied(t);
  if (target == Layout::llama_cpp) {
    gguf_set_val_str(w.kv(), "clef.decision.type", "clef");
    gguf_set_val_u32(w.kv(), "clef.decision.routing_block_count",
                     static_cast<std::uint32_t>(c.routing_layers));
    gguf_set_val_u32(w.kv(), "clef.decision.block_count", static_cast<std::uint32_t>(c.layers));
    gguf_set_val_u32(w.kv(), "clef.decision.head_count", static_cast<std::uint32_t>(c.heads));
    gguf_set_val_f32(w.kv(), "clef.attention.layer_norm_epsilon",
                     static_cast<float>(kHeadLayerNormEps));
    add_llama_cpp_head(w, h, head_matrix_type);
  } else {
    gguf_set_val_str(w.kv(), "qwen35.decision.type", "clef");
    const std::pair<const char*, std::int64_t> keys[] = {
        {"hidden_size", c.hidden_size}, {"width", c.width}, {"routing_layers", c.routing_layers},
        {"layers", c.layers},           {"heads", c.heads}, {"feedforward", c.feedforward}};
    for (const auto& [k, v] : keys) {
      gguf_set_val_u32(w.kv(), (std::string("qwen35.decision.") + k).c_str(),
                       static_cast<std::uint32_t>(v));
    }
    add_torch_named_head(w, h);
  }
  w.write(out, source.gguf);
}

}  // namespace clef::artifact
