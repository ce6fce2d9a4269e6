/* SPDX-License-Identifier: MIT */
// eigen_spmm.cpp - the CPU sparse baseline of `make bench`: Eigen's
// sparse x dense product on the same mask as patc's kernel.
#include <Eigen/Dense>
#include <Eigen/Sparse>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

extern "C" double eigen_spmm_us(const float *w, int64_t M, int64_t K, const float *x, int64_t N,
                                int reps, double *checksum);

// W (M x K, zeros where pruned) times X (K x N); the median time in
// microseconds over at least reps runs after a warm-up (one run where a
// call takes over 2 s), and a checksum of the result.
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
	// warmed up and timed as cpu_bench.c's bench_time: at least 20 ms of
	// calls first, then about 50 ms of them (at most 64, at least reps)
	auto secs = [](std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
		return std::chrono::duration<double>(b - a).count();
	};
	auto w0 = std::chrono::steady_clock::now(), w1 = w0;
	double last;
	do {
		auto a = std::chrono::steady_clock::now();
		C.noalias() = s * X;
		w1 = std::chrono::steady_clock::now();
		last = secs(a, w1);
	} while (secs(w0, w1) < 0.02);
	// over 2 s a call (the largest shapes at 50%), one timed run: the bench
	// would otherwise spend most of its hour here
	if (last > 2.0)
		reps = 1;
	else
		reps = std::min(64, std::max(reps, last > 0 ? (int)std::ceil(0.05 / last) : 64));
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
