// Prints sherpa-onnx recognition results with sherpa-onnx's own JSON writers, for lattice-tools' tests.
// offline_body.inc / online_helpers.inc / online_body.inc are copied verbatim from sherpa-onnx v1.13.4
// (commit 634265c9b57642fdd158120148785c89aa281c4b, Apache-2.0):
//   sherpa-onnx/csrc/offline-stream.cc      OfflineRecognitionResult::AsJsonString
//   sherpa-onnx/csrc/online-recognizer.cc   VecToString helpers, OnlineRecognizerResult::AsJsonString
// The structs below keep the fields of offline-stream.h and online-recognizer.h that the writers print.
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace sherpa_onnx {
struct OfflineRecognitionResult {
  std::string text;
  std::vector<std::string> tokens;
  std::string lang, emotion, event;
  std::vector<float> timestamps, durations, ys_log_probs;
  std::vector<int32_t> words;
  std::vector<float> segment_timestamps, segment_durations;
  std::vector<std::string> segment_texts;
  std::string AsJsonString() const;
};
struct OnlineRecognizerResult {
  std::string text;
  std::vector<std::string> tokens;
  std::vector<float> timestamps, ys_probs, lm_probs, context_scores;
  std::vector<int32_t> words;
  int32_t segment = 0;
  float start_time = 0;
  bool is_final = false, is_eof = false;
  std::string AsJsonString() const;
};
#include "offline_body.inc"
namespace {
#include "online_helpers.inc"
#include "online_body.inc"
}  // namespace sherpa_onnx

using sherpa_onnx::OfflineRecognitionResult;
using sherpa_onnx::OnlineRecognizerResult;

// the writer's object with the utterance's key put first (what a user's driver script adds)
static std::string Keyed(const std::string &key, const std::string &json) {
  std::ostringstream os;
  os << "{\"key\": " << std::quoted(key) << ", " << json.substr(1);
  return os.str();
}

int main() {
  // 1. a 1-best result (greedy search of a BPE transducer: tokens start with a space at a word start)
  OfflineRecognitionResult a;
  a.text = "the tribal chieftain called";
  a.tokens = {" the", " tri", "bal", " chief", "tain", " called"};
  a.timestamps = {0.90f, 1.26f, 1.56f, 1.80f, 2.16f, 2.46f};
  a.ys_log_probs = {-0.012f, -0.3f, -0.05f, -0.2f, -0.01f, -0.4f};
  std::cout << Keyed("test_wavs/0.wav", a.AsJsonString()) << "\n";

  // 2. several results of one utterance (e.g. decoded with several configurations), best first
  OfflineRecognitionResult h1, h2, h3;
  h1.text = "hello world";
  h1.tokens = {" hello", " world"};
  h1.timestamps = {0.12f, 0.48f};
  h1.ys_log_probs = {-0.25f, -0.35f};
  h2.text = "yellow world";
  h2.tokens = {" yel", "low", " world"};
  h2.timestamps = {0.12f, 0.28f, 0.48f};
  h2.ys_log_probs = {-0.5f, -0.5f, -0.5f};
  h3.text = "hello word";
  h3.tokens = {" hello", " word"};
  h3.timestamps = {0.12f, 0.48f};
  h3.ys_log_probs = {-0.5f, -2.0f};
  std::cout << "{\"key\": \"test_wavs/1.wav\", \"hypotheses\": [" << h1.AsJsonString() << ", "
            << h2.AsJsonString() << ", " << h3.AsJsonString() << "]}\n";

  // 3. a TDT model: durations are filled
  OfflineRecognitionResult t;
  t.text = "good morning";
  t.tokens = {" good", " mor", "ning"};
  t.timestamps = {0.32f, 0.64f, 0.88f};
  t.durations = {0.24f, 0.16f, 0.32f};
  t.ys_log_probs = {-0.1f, -0.2f, -0.3f};
  std::cout << Keyed("test_wavs/2.wav", t.AsJsonString()) << "\n";

  // 4. a streaming result of a second segment: timestamps count from the segment's start_time
  OnlineRecognizerResult o;
  o.text = "after the pause";
  o.tokens = {" after", " the", " pa", "use"};
  o.timestamps = {0.20f, 0.60f, 0.80f, 1.00f};
  o.ys_probs = {-0.1f, -0.05f, -0.3f, -0.2f};
  o.segment = 1;
  o.start_time = 5.12f;
  o.is_final = true;
  std::cout << Keyed("test_wavs/3.wav", o.AsJsonString()) << "\n";
  return 0;
}
