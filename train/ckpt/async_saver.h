// A background thread that runs one job at a time: the asynchronous checkpoint writer. The
// trainer hands it the write of this rank's part (from a host snapshot) and goes on training;
// before the next save it waits for the job, so at most one write is in flight.
#pragma once
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace nd::train {

class BackgroundWriter {
 public:
  BackgroundWriter();
  ~BackgroundWriter();  // waits for a running job, then joins the thread
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;

  // Runs `job` on the thread; waits first for the job before it, if any.
  void submit(std::function<void()> job);
  // True once the last submitted job has ended (or none was submitted).
  bool idle() const;
  // Waits for the last job; returns the message of the nd::Error (or other exception) it threw,
  // "" when it succeeded. The message is handed out once.
  std::string wait();

 private:
  void loop();
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::function<void()> job_;
  bool running_ = false;
  bool stopping_ = false;
  std::string error_;
  std::thread thread_;
};

}  // namespace nd::train
