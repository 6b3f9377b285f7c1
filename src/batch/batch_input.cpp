#include "batch/batch_input.hpp"

#include "json/parse.hpp"
#include "json/render.hpp"
#include "util/digest.hpp"
#include "util/error.hpp"
#include "util/text_lines.hpp"

namespace clef::batch {

std::vector<BatchItem> parse_batch_input(std::string_view text) {
  std::vector<BatchItem> out;
  for (const auto& [line_no, line] : util::nonblank_lines(text)) {
    BatchItem item;
    item.line = line_no;
    item.id = json::Value::integer(std::int64_t{line_no});
    util::Digest digest(util::Digest::Kind::sha256);
    digest.update(line);
    item.line_sha256 = digest.hex();
    try {
      json::Value v = json::parse(line);
      if (!v.is_object()) {
        item.error = "the line is not a JSON object";
      } else if (const json::Value* request = v.find("request"); request != nullptr) {
        if (const json::Value* id = v.find("id"); id != nullptr) item.id = *id;
        if (!request->is_object()) {
          item.error = "\"request\" is not a JSON object";
        } else {
          item.request = *request;
          item.body = json::dumps_unsorted(*request);
        }
      } else {
        item.request = std::move(v);
        item.body = std::string(line);  // the client's own bytes
      }
    } catch (const Error& e) {
      item.error = e.what();  // "invalid JSON at byte N: ..."
    }
    out.push_back(std::move(item));
  }
  return out;
}

}  // namespace clef::batch
