// Model summaries (see summary.h).
#include "summary.h"

#include <algorithm>
#include <sstream>

#include "../autograd/tape.h"
#include "../tensor/ops.h"

namespace ctrax {

std::string summary(Layer& model, const Signature& input) {
  const Tree saved_w = model.weights(), saved_s = model.state();
  NoGradScope no_grad;
  LayerPass init_pass = LayerPass::over(model);
  auto [w, s] = Layer::init_in_pass(model, input, Key(), init_pass, model.name());
  Stack zeros_in;
  for (const ShapeDtype& sd : input) zeros_in.push_back(zeros(sd.shape, sd.dtype));
  std::vector<LayerSummaryRow> rows;
  LayerPass pass = LayerPass::over(model);
  pass.summary = &rows;
  Layer::apply_in_pass(model, zeros_in, w, s, Key(), Mode::eval, pass, model.name());
  model.set_weights(saved_w);
  model.set_state(saved_s);

  std::vector<std::string> labels, shapes;
  size_t label_width = 0, shape_width = 0;
  for (const LayerSummaryRow& r : rows) {
    labels.push_back(std::string(static_cast<size_t>(2 * r.depth), ' ') + r.label);
    shapes.push_back(to_string(r.input) + " -> " + to_string(r.output));
    label_width = std::max(label_width, labels.back().size());
    shape_width = std::max(shape_width, shapes.back().size());
  }
  std::ostringstream out;
  for (size_t i = 0; i < rows.size(); ++i) {
    out << labels[i] << std::string(label_width - labels[i].size() + 2, ' ') << shapes[i]
        << std::string(shape_width - shapes[i].size() + 2, ' ') << rows[i].parameters << "\n";
  }
  out << "total parameters: " << Layer::count_parameters(w) << "\n";
  return out.str();
}

namespace {
void print_structure(std::ostream& out, const Layer& layer, int depth) {
  out << std::string(static_cast<size_t>(2 * depth), ' ') << layer.name() << "  (in " << layer.n_in() << ", out "
      << layer.n_out() << ")\n";
  for (const LayerPtr& sub : layer.sublayers()) print_structure(out, *sub, depth + 1);
}
}  // namespace

std::ostream& operator<<(std::ostream& out, const Layer& layer) {
  print_structure(out, layer, 0);
  return out;
}

}  // namespace ctrax
