#include "testmodel/init.hpp"

#include <cmath>

namespace clef::testmodel {

void draw(const Init& init, Rng& rng, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    double v = 0.0;
    switch (init.kind) {
      case Init::Kind::normal:
        v = init.a + init.b * rng.normal();
        break;
      case Init::Kind::uniform:
        v = rng.uniform(init.a, init.b);
        break;
      case Init::Kind::neg_exp_uniform:
        v = -std::exp(rng.uniform(init.a, init.b));
        break;
      case Init::Kind::dt_bias: {
        const double dt = std::exp(rng.uniform(init.a, init.b));
        v = dt + std::log(-std::expm1(-dt));  // inverse of softplus(x) = log(1 + e^x)
        break;
      }
    }
    out[i] = static_cast<float>(v);
  }
}

}  // namespace clef::testmodel
