// The program the install tests build against the CUDA component (find_package(ctrax COMPONENTS
// cuda) -> ctrax::cuda, or pkg-config ctrax-cuda), in CUDA builds only. Linking the component
// puts the CUDA module in the process from the start; without a GPU, asking for one still gives
// a clear answer rather than an error. Exits non-zero when the module is not there.
#include <ctrax/ctrax.h>
#include <ctrax/kernels/cuda/runtime.h>

#include <cstdio>
#include <exception>
#include <fstream>
#include <string>

int main() {
  try {
    namespace kc = ctrax::kernels::cuda;
    bool mapped = false;
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) mapped = mapped || line.find("libctrax_cuda") != std::string::npos;
    if (!mapped || !kc::module_loaded()) {
      std::fprintf(stderr, "consumer_gpu: libctrax_cuda is not loaded at start (mapped %d, module_loaded %d)\n",
                   mapped, kc::module_loaded());
      return 1;
    }
    if (kc::available()) {
      const ctrax::Tensor x = ctrax::ones(ctrax::Shape{2, 2}).to(ctrax::Device::cuda(0));
      const float sum = ctrax::sum(x).to(ctrax::Device::cpu()).item<float>();
      std::printf("consumer_gpu: %d CUDA device(s); sum on the GPU = %g\n", kc::device_count(), sum);
      return sum == 4.0f ? 0 : 1;
    }
    std::printf("consumer_gpu: the CUDA module is loaded (%s); no GPU here: %s\n", kc::module_path().c_str(),
                kc::unavailable_reason().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer_gpu: exception: %s\n", e.what());
    return 1;
  }
}
