// The cross-entropy step of cross-entropy.mlir (f32, i32 labels,
// reductions none, sum and mean, every 7th label ignored, 200 rows, 600
// classes) spelled with primitives that convert-trn-to-nc lowers: the one-hot
// matrix compares the labels with a constant [0, 600) (neither trn.gather nor
// trn.iota lowers yet), the losses come from log_softmax and the gradients
// from softmax. The simulator's outputs match this graph's reference and
// the reference of the composite ops in cross-entropy.mlir (same names,
// same inputs).
// RUN: rm -rf %t && mkdir -p %t
// RUN: trn-cc compile %s -o %t/a.trnart --no-cache -q
// RUN: trn-eval %s --random 17 --int-max 600 --save-inputs %t/in.npz > /dev/null
// RUN: %trn_python %S/Inputs/edit_inputs.py %t/in.npz --every labels:7:-100 --scale logits:4
// RUN: trn-eval %s --inputs %t/in.npz --outputs %t/ref.npz > /dev/null
// RUN: trn-eval %S/cross-entropy.mlir --inputs %t/in.npz --outputs %t/ref-composite.npz > /dev/null
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref.npz %t/out.npz 1e-4 | FileCheck %s
// RUN: %trn_python %S/Inputs/compare.py %t/ref-composite.npz %t/out.npz 1e-4 | FileCheck %s
// CHECK: 6 outputs match
// Every row ignored: loss_mean is 0 / 0 = NaN (as in PyTorch) on the
// simulator too, and the gradients are 0.
// RUN: %trn_python %S/Inputs/edit_inputs.py %t/in.npz --every labels:1:-100
// RUN: trn-eval %S/cross-entropy.mlir --inputs %t/in.npz --outputs %t/ref-none-kept.npz | FileCheck %s --check-prefix=NAN
// RUN: trn-run %t/a.trnart --inputs %t/in.npz --outputs %t/out-none-kept.npz --poison > /dev/null
// RUN: %trn_python %S/Inputs/compare.py %t/ref-none-kept.npz %t/out-none-kept.npz 1e-4 | FileCheck %s
// NAN: loss_mean : tensor<1xf32> = [nan]

func.func @cross_entropy_onehot(%logits: tensor<200x600xf32> {trn.name = "logits"}, %labels: tensor<200xi32> {trn.name = "labels"},
                   %grad_rows: tensor<200xf32> {trn.name = "grad_rows"}, %grad1: tensor<1xf32> {trn.name = "grad"})
    -> (tensor<200xf32> {trn.name = "loss_none"}, tensor<1xf32> {trn.name = "loss_sum"}, tensor<1xf32> {trn.name = "loss_mean"},
        tensor<200x600xf32> {trn.name = "dlogits_none"}, tensor<200x600xf32> {trn.name = "dlogits_sum"},
        tensor<200x600xf32> {trn.name = "dlogits_mean"}) {
  %grad = trn.reshape %grad1 : (tensor<1xf32>) -> tensor<f32>
  // onehot[n, c] = (labels[n] == c); rows labelled -100 have none.
  %classes = trn.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139, 140, 141, 142, 143, 144, 145, 146, 147, 148, 149, 150, 151, 152, 153, 154, 155, 156, 157, 158, 159, 160, 161, 162, 163, 164, 165, 166, 167, 168, 169, 170, 171, 172, 173, 174, 175, 176, 177, 178, 179, 180, 181, 182, 183, 184, 185, 186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196, 197, 198, 199, 200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220, 221, 222, 223, 224, 225, 226, 227, 228, 229, 230, 231, 232, 233, 234, 235, 236, 237, 238, 239, 240, 241, 242, 243, 244, 245, 246, 247, 248, 249, 250, 251, 252, 253, 254, 255, 256, 257, 258, 259, 260, 261, 262, 263, 264, 265, 266, 267, 268, 269, 270, 271, 272, 273, 274, 275, 276, 277, 278, 279, 280, 281, 282, 283, 284, 285, 286, 287, 288, 289, 290, 291, 292, 293, 294, 295, 296, 297, 298, 299, 300, 301, 302, 303, 304, 305, 306, 307, 308, 309, 310, 311, 312, 313, 314, 315, 316, 317, 318, 319, 320, 321, 322, 323, 324, 325, 326, 327, 328, 329, 330, 331, 332, 333, 334, 335, 336, 337, 338, 339, 340, 341, 342, 343, 344, 345, 346, 347, 348, 349, 350, 351, 352, 353, 354, 355, 356, 357, 358, 359, 360, 361, 362, 363, 364, 365, 366, 367, 368, 369, 370, 371, 372, 373, 374, 375, 376, 377, 378, 379, 380, 381, 382, 383, 384, 385, 386, 387, 388, 389, 390, 391, 392, 393, 394, 395, 396, 397, 398, 399, 400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 418, 419, 420, 421, 422, 423, 424, 425, 426, 427, 428, 429, 430, 431, 432, 433, 434, 435, 436, 437, 438, 439, 440, 441, 442, 443, 444, 445, 446, 447, 448, 449, 450, 451, 452, 453, 454, 455, 456, 457, 458, 459, 460, 461, 462, 463, 464, 465, 466, 467, 468, 469, 470, 471, 472, 473, 474, 475, 476, 477, 478, 479, 480, 481, 482, 483, 484, 485, 486, 487, 488, 489, 490, 491, 492, 493, 494, 495, 496, 497, 498, 499, 500, 501, 502, 503, 504, 505, 506, 507, 508, 509, 510, 511, 512, 513, 514, 515, 516, 517, 518, 519, 520, 521, 522, 523, 524, 525, 526, 527, 528, 529, 530, 531, 532, 533, 534, 535, 536, 537, 538, 539, 540, 541, 542, 543, 544, 545, 546, 547, 548, 549, 550, 551, 552, 553, 554, 555, 556, 557, 558, 559, 560, 561, 562, 563, 564, 565, 566, 567, 568, 569, 570, 571, 572, 573, 574, 575, 576, 577, 578, 579, 580, 581, 582, 583, 584, 585, 586, 587, 588, 589, 590, 591, 592, 593, 594, 595, 596, 597, 598, 599]> : tensor<600xi32>
  %cls = trn.broadcast_in_dim %classes, dims = [1] : (tensor<600xi32>) -> tensor<200x600xi32>
  %lab = trn.broadcast_in_dim %labels, dims = [0] : (tensor<200xi32>) -> tensor<200x600xi32>
  %hot = trn.compare eq, %lab, %cls : tensor<200x600xi32>
  %onehot = trn.convert %hot : tensor<200x600xi1> -> tensor<200x600xf32>
  // keep[n] = (labels[n] != -100); count = the rows that count.
  %ignore = trn.constant dense<-100> : tensor<200xi32>
  %zeros = trn.constant dense<0.0> : tensor<200xf32>
  %kept = trn.compare ne, %labels, %ignore : tensor<200xi32>
  %keep = trn.convert %kept : tensor<200xi1> -> tensor<200xf32>
  %count = trn.reduce sum %keep, dims = [0] : (tensor<200xf32>) -> tensor<f32>
  // Losses: -sum(onehot * log_softmax(logits)) per row.
  %logp = trn.log_softmax %logits, dim = 1 : tensor<200x600xf32>
  %picked = trn.mul %onehot, %logp : tensor<200x600xf32>
  %nll = trn.reduce sum %picked, dims = [1] : (tensor<200x600xf32>) -> tensor<200xf32>
  %none = trn.neg %nll : tensor<200xf32>
  %sum = trn.reduce sum %none, dims = [0] : (tensor<200xf32>) -> tensor<f32>
  %mean = trn.div %sum, %count : tensor<f32>
  // Gradients: (softmax(logits) - onehot) times the row weight, selected
  // to 0 for ignored rows (as the decomposition does: no 0/0 when all are).
  %p = trn.softmax %logits, dim = 1 : tensor<200x600xf32>
  %diff = trn.sub %p, %onehot : tensor<200x600xf32>
  %w_none = trn.select %kept, %grad_rows, %zeros : tensor<200xi1>, tensor<200xf32>
  %wb_none = trn.broadcast_in_dim %w_none, dims = [0] : (tensor<200xf32>) -> tensor<200x600xf32>
  %dnone = trn.mul %diff, %wb_none : tensor<200x600xf32>
  %g_rows = trn.broadcast_in_dim %grad, dims = [] : (tensor<f32>) -> tensor<200xf32>
  %w_sum = trn.select %kept, %g_rows, %zeros : tensor<200xi1>, tensor<200xf32>
  %wb_sum = trn.broadcast_in_dim %w_sum, dims = [0] : (tensor<200xf32>) -> tensor<200x600xf32>
  %dsum = trn.mul %diff, %wb_sum : tensor<200x600xf32>
  %g_mean = trn.div %grad, %count : tensor<f32>
  %gm_rows = trn.broadcast_in_dim %g_mean, dims = [] : (tensor<f32>) -> tensor<200xf32>
  %w_mean = trn.select %kept, %gm_rows, %zeros : tensor<200xi1>, tensor<200xf32>
  %wb_mean = trn.broadcast_in_dim %w_mean, dims = [0] : (tensor<200xf32>) -> tensor<200x600xf32>
  %dmean = trn.mul %diff, %wb_mean : tensor<200x600xf32>
  %sum1 = trn.reshape %sum : (tensor<f32>) -> tensor<1xf32>
  %mean1 = trn.reshape %mean : (tensor<f32>) -> tensor<1xf32>
  return %none, %sum1, %mean1, %dnone, %dsum, %dmean : tensor<200xf32>, tensor<1xf32>, tensor<1xf32>, tensor<200x600xf32>, tensor<200x600xf32>, tensor<200x600xf32>
}
