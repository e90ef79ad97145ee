# ONNX Runtime user code, unchanged except for the import: test_ort_port.py runs it with
# its onnxruntime import line replaced by `import ingot as ort`.
#   ort_user_script.py MODEL INPUTS.npz OUT.npz
import sys

import numpy as np
import onnxruntime as ort

model, inputs, out = sys.argv[1:4]
so = ort.SessionOptions()
so.intra_op_num_threads = 2
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
sess = ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])
data = np.load(inputs)
names = [i.name for i in sess.get_inputs()]
feeds = {n: data[n] for n in names}
for i in sess.get_inputs():
    print(i.name, i.type, i.shape)
output_names = [o.name for o in sess.get_outputs()]
result = sess.run(None, feeds)
first = sess.run([output_names[0]], feeds)[0]
assert np.array_equal(first, result[0])
np.savez(out, **dict(zip(output_names, result)))
print("providers", sess.get_providers())
