#include "testmodel/gguf_stream_writer.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "testmodel/rng.hpp"

namespace clef::testmodel {

namespace {

constexpr std::size_t kMaxTensors = 8192;
constexpr std::int64_t kChunkValues = std::int64_t{1} << 22;  // values drawn per block of rows

/// Converts `nrows` rows of `n_per_row` floats to `type` into `dst`.
void convert_rows(ggml_type type, const float* src, void* dst, std::int64_t nrows,
                  std::int64_t n_per_row) {
  const std::int64_t n = nrows * n_per_row;
  switch (type) {
    case GGML_TYPE_F32:
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
      break;
    case GGML_TYPE_F16:
      ggml_fp32_to_fp16_row(src, static_cast<ggml_fp16_t*>(dst), n);
      break;
    case GGML_TYPE_BF16:
      ggml_fp32_to_bf16_row_ref(src, static_cast<ggml_bf16_t*>(dst), n);
      break;
    default:
      ggml_quantize_chunk(type, src, dst, 0, nrows, n_per_row, nullptr);
      break;
  }
}

constexpr std::int64_t kPoolBlocks = 4096;

bool is_quantized(ggml_type type) {
  return type != GGML_TYPE_F32 && type != GGML_TYPE_F16 && type != GGML_TYPE_BF16;
}

/// Writes `rows` x `n_per_row` values of `type` as blocks picked from `pool` (kPoolBlocks blocks
/// of ggml_type_size(type) bytes) by `rng`.
void write_pooled(std::ofstream& out, Rng& rng, ggml_type type, const std::vector<char>& pool,
                  std::int64_t rows, std::int64_t n_per_row, std::vector<char>& buffer) {
  const std::size_t block = ggml_type_size(type);
  const std::int64_t blocks = rows * (n_per_row / ggml_blck_size(type));
  buffer.resize(static_cast<std::size_t>(blocks) * block);
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::size_t pick = static_cast<std::size_t>(rng.next_u64() % kPoolBlocks);
    std::memcpy(buffer.data() + static_cast<std::size_t>(b) * block, pool.data() + pick * block,
                block);
  }
  out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
}

}  // namespace

GgufStreamWriter::GgufStreamWriter(std::string stream_label)
    : label_(std::move(stream_label)), gguf_(gguf_init_empty()) {
  ggml_init_params params{};
  params.mem_size = kMaxTensors * ggml_tensor_overhead();
  params.mem_buffer = nullptr;
  params.no_alloc = true;
  meta_.reset(ggml_init(params));
  if (!gguf_ || !meta_) throw std::runtime_error("gguf: cannot allocate a writer context");
}

void GgufStreamWriter::add_tensor(GgufTensorSpec spec) {
  if (spec.name.size() >= GGML_MAX_NAME) {
    throw std::invalid_argument("gguf: tensor name too long: " + spec.name);
  }
  if (spec.ne.empty() || spec.ne.size() > GGML_MAX_DIMS) {
    throw std::invalid_argument("gguf: bad rank for " + spec.name);
  }
  if (gguf_find_tensor(gguf_.get(), spec.name.c_str()) >= 0) {
    throw std::invalid_argument("gguf: duplicate tensor " + spec.name);
  }
  if (spec.ne[0] % ggml_blck_size(spec.type) != 0) {
    throw std::invalid_argument("gguf: " + spec.name + " row length " + std::to_string(spec.ne[0]) +
                                " is not a multiple of the " + ggml_type_name(spec.type) +
                                " block size");
  }
  if (specs_.size() >= kMaxTensors) throw std::invalid_argument("gguf: too many tensors");
  ggml_tensor* t =
      ggml_new_tensor(meta_.get(), spec.type, static_cast<int>(spec.ne.size()), spec.ne.data());
  ggml_set_name(t, spec.name.c_str());
  gguf_add_tensor(gguf_.get(), t);
  specs_.push_back(std::move(spec));
}

void GgufStreamWriter::write(const std::filesystem::path& path, std::uint64_t seed) const {
  const std::filesystem::path tmp = path.string() + ".tmp";
  try {
    write_unrenamed(tmp, seed);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
  std::filesystem::rename(tmp, path);
}

void GgufStreamWriter::write_unrenamed(const std::filesystem::path& tmp, std::uint64_t seed) const {
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot create " + tmp.string());

  std::vector<char> meta(gguf_get_meta_size(gguf_.get()));
  gguf_get_meta_data(gguf_.get(), meta.data());
  out.write(meta.data(), static_cast<std::streamsize>(meta.size()));

  const std::size_t alignment = gguf_get_alignment(gguf_.get());
  std::size_t data_pos = 0;  // bytes written into the data section
  std::vector<float> values;
  std::vector<char> converted;
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    const GgufTensorSpec& spec = specs_[i];
    if (gguf_get_tensor_offset(gguf_.get(), static_cast<std::int64_t>(i)) != data_pos) {
      throw std::runtime_error("gguf: tensor offset mismatch at " + spec.name);
    }
    const std::int64_t n_per_row = spec.ne[0];
    std::int64_t nrows = 1;
    for (std::size_t d = 1; d < spec.ne.size(); ++d) nrows *= spec.ne[d];
    const std::int64_t chunk_rows = std::max<std::int64_t>(1, kChunkValues / n_per_row);
    Rng rng(derive_seed(seed, label_ + "/" + spec.name));
    std::size_t written = 0;
    if (pooled_quant_blocks_ && is_quantized(spec.type)) {
      const std::int64_t block_values = ggml_blck_size(spec.type);
      values.resize(static_cast<std::size_t>(kPoolBlocks * block_values));
      draw(spec.init, rng, values.data(), values.size());
      std::vector<char> pool(static_cast<std::size_t>(kPoolBlocks) * ggml_type_size(spec.type));
      convert_rows(spec.type, values.data(), pool.data(), kPoolBlocks, block_values);
      for (std::int64_t r0 = 0; r0 < nrows; r0 += chunk_rows) {
        const std::int64_t rows = std::min(chunk_rows, nrows - r0);
        write_pooled(out, rng, spec.type, pool, rows, n_per_row, converted);
        written += converted.size();
      }
    } else {
      for (std::int64_t r0 = 0; r0 < nrows; r0 += chunk_rows) {
        const std::int64_t rows = std::min(chunk_rows, nrows - r0);
        values.resize(static_cast<std::size_t>(rows * n_per_row));
        draw(spec.init, rng, values.data(), values.size());
        const std::size_t bytes =
            ggml_row_size(spec.type, n_per_row) * static_cast<std::size_t>(rows);
        converted.resize(bytes);
        convert_rows(spec.type, values.data(), converted.data(), rows, n_per_row);
        out.write(converted.data(), static_cast<std::streamsize>(bytes));
        written += bytes;
      }
    }
    const std::size_t padded = GGML_PAD(written, alignment);
    const std::vector<char> zeros(padded - written, 0);
    out.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
    data_pos += padded;
  }
  out.flush();
  if (!out) throw std::runtime_error("cannot write " + tmp.string());
}

}  // namespace clef::testmodel
