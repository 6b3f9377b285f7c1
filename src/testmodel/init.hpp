#pragma once
// How the values of one random tensor are drawn (scales chosen so that hidden states stay finite
// and well-conditioned; see backbone_writer.cpp for the choices per tensor).

#include <cstddef>

#include "testmodel/rng.hpp"

namespace clef::testmodel {

struct Init {
  enum class Kind {
    normal,           ///< a + b * N(0, 1)
    uniform,          ///< U(a, b)
    neg_exp_uniform,  ///< -exp(U(a, b)): GDN ssm_a = -exp(A_log)
    dt_bias,          ///< softplus^-1(exp(U(a, b))): Mamba-style dt bias for dt in [e^a, e^b)
  };
  Kind kind;
  double a;
  double b;

  static Init normal(double mean, double std) { return {Kind::normal, mean, std}; }
  static Init uniform(double lo, double hi) { return {Kind::uniform, lo, hi}; }
  static Init neg_exp_uniform(double lo, double hi) { return {Kind::neg_exp_uniform, lo, hi}; }
  static Init dt_bias(double log_lo, double log_hi) { return {Kind::dt_bias, log_lo, log_hi}; }
};

/// Fills `out[0..n)` with the next n draws of `init` from `rng` (as float).
void draw(const Init& init, Rng& rng, float* out, std::size_t n);

}  // namespace clef::testmodel
