// eigen_spmm.cpp - the CPU sparse baseline of `make bench`: Eigen's
// sparse x dense product on the same mask as patc's kernel.
#include <Eigen/Dense>
#include <Eigen/Sparse>

#include <algorithm>
#include <chrono>
#include <vector>

extern "C" double eigen_spmm_us(const float *w, int64_t M, int64_t K, const float *x, int64_t N,
                                int reps, double *checksum);

// W (M x K, zeros where pruned) times X (K x N); the median time in
// microseconds over reps runs (one where a call takes over 2 s), and a
// checksum of the result.
extern "C" double eigen_spmm_us(const float *w, int64_t M, int64_t K, const float *x, int64_t N,
                                int reps, double *checksum)
{
	std::vector<Eigen::Triplet<float>> t;
	for (int64_t m = 0; m < M; m++)
		for (int64_t k = 0; k < K; k++)
			if (w[m * K + k] != 0.0f)
				t.emplace_back((int)m, (int)k, w[m * K + k]);
	Eigen::SparseMatrix<float, Eigen::RowMajor> s((Eigen::Index)M, (Eigen::Index)K);
	s.setFromTriplets(t.begin(), t.end());
	Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> X(x, K, N);
	Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> C(M, N);
	auto w0 = std::chrono::steady_clock::now();
	C.noalias() = s * X; // warm-up
	// over 2 s a call (the largest shapes at 50%), one timed run: the bench
	// would otherwise spend most of its hour here
	if (std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count() > 2.0)
		reps = 1;
	std::vector<double> us;
	for (int r = 0; r < reps; r++) {
		auto a = std::chrono::steady_clock::now();
		C.noalias() = s * X;
		auto b = std::chrono::steady_clock::now();
		us.push_back(std::chrono::duration<double, std::micro>(b - a).count());
	}
	std::sort(us.begin(), us.end());
	*checksum = (double)C.sum();
	return us[us.size() / 2];
}
