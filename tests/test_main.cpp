// The one main() of every test binary. Under mpirun it initialises MPI first, and only rank 0
// prints GoogleTest's report, so a multi-rank test reads like a single one.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>

int main(int argc, char** argv) {
  bool under_mpi = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_RANK") != nullptr;
  if (under_mpi) MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (under_mpi) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    // ND_TEST_ALL_RANKS=1 keeps every rank's report, for debugging a rank that fails alone.
    if (rank != 0 && std::getenv("ND_TEST_ALL_RANKS") == nullptr) {
      auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
      delete listeners.Release(listeners.default_result_printer());
    }
  }
  int result = RUN_ALL_TESTS();
  if (under_mpi) {
    // Every rank must agree: a failure on any rank fails the test everywhere.
    int worst = 0;
    MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    result = worst;
    MPI_Finalize();
  }
  return result;
}
