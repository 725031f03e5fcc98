"""Model parallelism: ResNet-50 split over two devices, then pipelined (PyTorch's model-parallel tutorial).

The code of the user's notes ("Multi GPU 학습") with ``torch`` spelled ``ember`` and ``'cuda:1'`` spelled
``'cpu:1'``: the CPU backend presents two logical devices, so the same code runs without GPUs (on GPUs, write
``'cuda:0'`` and ``'cuda:1'``). ``seq1`` (stem, ``layer1``, ``layer2``) lives on the first device, ``seq2``
(``layer3``, ``layer4``, pooling) and ``fc`` on the second; ``.to('cpu:1')`` inside ``forward`` carries the
activations across, and backward carries the gradients back. The pipelined version cuts the batch into
micro-batches of ``split_size`` rows so that, on GPUs whose kernels run asynchronously, both devices work at
once; ember's NumPy kernels are synchronous, so here it shows the schedule, not the overlap
(``ember.parallel.Pipe`` runs the stages in threads).

    EMBER_CPU_DEVICES=2 python examples/model_parallel_resnet50.py --batch-size 8 --image-size 64
"""
import argparse
import time

import ember
import ember.nn as nn
import ember.optim as optim
from ember.nn.models.resnet import Bottleneck, ResNet

num_classes = 1000


class ModelParallelResNet50(ResNet):
    def __init__(self, *args, num_classes=num_classes, **kwargs):
        super(ModelParallelResNet50, self).__init__(
            Bottleneck, [3, 4, 6, 3], *args, num_classes=num_classes, **kwargs)

        self.seq1 = nn.Sequential(
            self.conv1,
            self.bn1,
            self.relu,
            self.maxpool,

            self.layer1,
            self.layer2
        ).to('cpu:0')

        self.seq2 = nn.Sequential(
            self.layer3,
            self.layer4,
            self.avgpool,
        ).to('cpu:1')

        self.fc.to('cpu:1')

    def forward(self, x):
        x = self.seq2(self.seq1(x).to('cpu:1'))
        return self.fc(x.view(x.size(0), -1))


class PipelineParallelResNet50(ModelParallelResNet50):
    def __init__(self, split_size=20, *args, **kwargs):
        super(PipelineParallelResNet50, self).__init__(*args, **kwargs)
        self.split_size = split_size

    def forward(self, x):
        splits = iter(x.split(self.split_size, dim=0))
        s_next = next(splits)
        s_prev = self.seq1(s_next).to('cpu:1')
        ret = []

        for s_next in splits:
            # A. s_prev runs on the second device
            s_prev = self.seq2(s_prev)
            ret.append(self.fc(s_prev.view(s_prev.size(0), -1)))

            # B. s_next runs on the first device (at the same time as A. on GPUs)
            s_prev = self.seq1(s_next).to('cpu:1')

        s_prev = self.seq2(s_prev)
        ret.append(self.fc(s_prev.view(s_prev.size(0), -1)))

        return ember.cat(ret)


def train(model, batch_size, image_size, classes, num_batches):
    """The tutorial's training loop on random images and one-hot labels; returns the last loss."""
    model.train(True)
    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(model.parameters(), lr=0.001)
    one_hot_indices = ember.randint(0, classes, (batch_size, 1))
    for _ in range(num_batches):
        inputs = ember.randn(batch_size, 3, image_size, image_size)
        labels = ember.zeros(batch_size, classes).scatter_(1, one_hot_indices, 1)
        optimizer.zero_grad()
        outputs = model(inputs.to('cpu:0'))
        labels = labels.to(outputs.device)
        loss = loss_fn(outputs, labels)
        loss.backward()
        optimizer.step()
    return loss.item()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--num-classes", type=int, default=10)
    parser.add_argument("--num-batches", type=int, default=2)
    parser.add_argument("--split-size", type=int, default=4)
    args = parser.parse_args(argv)
    ember.backends.cpu.set_device_count(max(2, ember.backends.cpu.device_count()))
    ember.manual_seed(0)
    for name, make in (("single device", lambda: ember.nn.models.resnet50(num_classes=args.num_classes)),
                       ("model parallel", lambda: ModelParallelResNet50(num_classes=args.num_classes)),
                       ("pipeline parallel", lambda: PipelineParallelResNet50(split_size=args.split_size,
                                                                             num_classes=args.num_classes))):
        model = make()
        start = time.perf_counter()
        loss = train(model, args.batch_size, args.image_size, args.num_classes, args.num_batches)
        seconds = (time.perf_counter() - start) / args.num_batches
        print(f"{name:18s} loss {loss:.4f}  {seconds:.2f} s/batch")


if __name__ == "__main__":
    main()
