// BackgroundWriter: a mutex, a condition variable and one job slot.
#include "train/ckpt/async_saver.h"

#include "tensor/error.h"

namespace nd::train {

BackgroundWriter::BackgroundWriter() : thread_([this] { loop(); }) {}

BackgroundWriter::~BackgroundWriter() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !running_; });
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void BackgroundWriter::submit(std::function<void()> job) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return !running_; });
  job_ = std::move(job);
  running_ = true;
  error_.clear();
  changed_.notify_all();
}

bool BackgroundWriter::idle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !running_;
}

std::string BackgroundWriter::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return !running_; });
  std::string error = std::move(error_);
  error_.clear();
  return error;
}

void BackgroundWriter::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [this] { return stopping_ || (running_ && job_); });
    if (stopping_) return;
    std::function<void()> job = std::move(job_);
    job_ = nullptr;
    lock.unlock();
    std::string error;
    try {
      job();
    } catch (const Error& e) {
      error = e.message();
    } catch (const std::exception& e) {
      error = e.what();
    }
    lock.lock();
    error_ = error;
    running_ = false;
    changed_.notify_all();
  }
}

}  // namespace nd::train
