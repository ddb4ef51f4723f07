// Starting, finding and ending processes for the fault tests: a command started in its own
// process group with its output in files, the rank processes of an mpirun below it (found by
// their OMPI_COMM_WORLD_RANK), bounded waits, and clean-up by process id (SIGCONT, then SIGKILL)
// so a frozen rank never outlives its test.
#pragma once
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace nd::train::testing {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline std::string slurp_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Polls `done` every 50 ms for at most `limit_s`; true once it holds.
inline bool wait_until(const std::function<bool()>& done, double limit_s) {
  auto start = Clock::now();
  while (seconds_since(start) < limit_s) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

// Parent pid of `pid` from /proc, or -1.
inline pid_t parent_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 2));
  char state;
  pid_t parent = -1;
  rest >> state >> parent;
  return parent;
}

// The live process below `ancestor` whose environment says OMPI_COMM_WORLD_RANK=<rank>, or -1.
inline pid_t find_rank_process(pid_t ancestor, int rank) {
  const std::string wanted = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  DIR* proc = ::opendir("/proc");
  pid_t found = -1;
  while (dirent* entry = proc ? ::readdir(proc) : nullptr) {
    pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0) continue;
    bool below = false;
    for (pid_t p = parent_of(pid); p > 1; p = parent_of(p))
      if (p == ancestor) {
        below = true;
        break;
      }
    if (!below) continue;
    std::string env = slurp_file("/proc/" + std::to_string(pid) + "/environ");
    std::istringstream vars(env);
    std::string var;
    while (std::getline(vars, var, '\0'))
      if (var == wanted) found = pid;
    if (found > 0) break;
  }
  if (proc) ::closedir(proc);
  return found;
}

// A command (one program and its arguments, run through sh, which execs it) in its own process
// group, stdout and stderr in files.
class Child {
 public:
  // `before_exec` runs in the child (e.g. setrlimit).
  Child(const std::string& command, const std::string& out_path, const std::string& err_path,
        const std::function<void()>& before_exec = nullptr)
      : out_path_(out_path), err_path_(err_path) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      if (before_exec) before_exec();
      // exec: the shell becomes the command, so pid() is the command's own process.
      std::string line = "exec " + command + " > " + out_path + " 2> " + err_path;
      ::execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);
  }
  ~Child() {
    for (pid_t p : extra_) {
      ::kill(p, SIGCONT);
      ::kill(p, SIGKILL);
    }
    if (running()) {
      ::kill(-pid_, SIGCONT);
      ::kill(-pid_, SIGKILL);
      wait(10.0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  // Ended by the destructor as well (a rank that left the group, a stopped one).
  void also_clean_up(pid_t pid) { extra_.push_back(pid); }

  bool running() {
    if (exited_) return false;
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return !exited_;
  }
  // Waits at most `limit_s` for the command to end; true when it did.
  bool wait(double limit_s) { return wait_until([this] { return !running(); }, limit_s); }
  int exit_code() const { return exit_code_; }
  std::string out() const { return slurp_file(out_path_); }
  std::string err() const { return slurp_file(err_path_); }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int exit_code_ = -1;
  std::string out_path_, err_path_;
  std::vector<pid_t> extra_;
};

// mpirun as the tests run it: as root where needed, ranks oversubscribed, one thread each.
inline std::string mpirun(int np) {
  return "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 " + std::string(ND_MPIEXEC) +
         " -np " + std::to_string(np) + " --oversubscribe";
}

}  // namespace nd::train::testing
