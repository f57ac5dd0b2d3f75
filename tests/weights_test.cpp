#include "attn/weights.hpp"

#include <doctest/doctest.h>

#include "attn/attention.hpp"
#include "attn/error.hpp"
#include "support/reference.hpp"

using attn::Matrix;
using attn::TorchKernel;
using attn::WeightInit;
namespace test = attn::test;

TEST_CASE("init names round-trip, and an unknown one is refused") {
  for (const WeightInit init :
       {WeightInit::kRand, WeightInit::kRandTransposed, WeightInit::kLinear}) {
    CHECK(attn::parse_init(attn::init_name(init)) == init);
  }
  CHECK_THROWS_WITH_AS(attn::parse_init("uniform"),
                       "init 'uniform' is not known: allowed are rand, rand-transposed, linear",
                       attn::Error);
}

TEST_CASE("each init draws its layout from the generator, as PyTorch does") {
  attn::TorchGenerator a(123), b(123), c(123);
  const Matrix rand = attn::draw_weight(a, WeightInit::kRand, 3, 2, TorchKernel::kAvx2);
  const Matrix transposed =
      attn::draw_weight(b, WeightInit::kRandTransposed, 3, 2, TorchKernel::kAvx2);
  const Matrix linear = attn::draw_weight(c, WeightInit::kLinear, 3, 2, TorchKernel::kAvx2);
  CHECK(rand.rows() == 3);
  CHECK(rand.cols() == 2);
  CHECK(transposed.rows() == 2);
  CHECK(transposed.cols() == 3);
  CHECK(linear.rows() == 2);
  CHECK(linear.cols() == 3);
  // torch.rand fills in memory order whatever the shape: the same six draws.
  CHECK(test::bits_of(rand) == test::bits_of(transposed));
  // nn.Linear(3, 2): kaiming bound 1/sqrt(3), drawn as uniform_(-bound, bound).
  CHECK(linear.cwiseAbs().maxCoeff() <= static_cast<float>(attn::kaiming_uniform_bound(3)));
}

TEST_CASE("apply_weight: X W for rand, X Wᵀ for the (d_out, d_in) layouts") {
  Matrix x(2, 3), w(3, 2);
  x << 1, 2, 3, 4, 5, 6;
  w << 1, 0, 0, 1, 1, 1;
  const Matrix w_t = w.transpose();
  CHECK(test::bits_of(attn::apply_weight(x, w, WeightInit::kRand)) ==
        test::bits_of(attn::matmul(x, w)));
  CHECK(test::bits_of(attn::apply_weight(x, w_t, WeightInit::kLinear)) ==
        test::bits_of(attn::matmul(x, w)));
  CHECK(test::bits_of(attn::apply_weight(x, w_t, WeightInit::kRandTransposed)) ==
        test::bits_of(attn::matmul(x, w)));
  CHECK_THROWS_AS(attn::apply_weight(x, w, WeightInit::kLinear), attn::Error);
}

TEST_CASE("equations and dimension names follow the init") {
  CHECK(attn::weight_equation(WeightInit::kRand, "W_q", "d_in", "d_kq") ==
        "W_q = torch.rand(d_in, d_kq)");
  CHECK(attn::weight_equation(WeightInit::kRandTransposed, "W_q", "d_in", "d_kq") ==
        "W_q = torch.rand(d_kq, d_in)");
  CHECK(attn::weight_equation(WeightInit::kLinear, "W_q", "d_in", "d_kq") ==
        "W_q = nn.Linear(d_in, d_kq, bias=False).weight");
  CHECK(attn::projection_equation(WeightInit::kRand, "Q", "X", "W_q") == "Q = X W_q");
  CHECK(attn::projection_equation(WeightInit::kRandTransposed, "Q", "X", "W_q") == "Q = (W_q Xᵀ)ᵀ");
  CHECK(attn::projection_equation(WeightInit::kLinear, "Q", "X", "W_q") == "Q = X W_qᵀ");
  CHECK(attn::weight_dims(WeightInit::kRand, "d_in", "d_v") ==
        std::vector<std::string>{"d_in", "d_v"});
  CHECK(attn::weight_dims(WeightInit::kLinear, "d_in", "d_v") ==
        std::vector<std::string>{"d_v", "d_in"});
}
