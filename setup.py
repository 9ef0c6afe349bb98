"""Install mmseg-sign: ``pip install -e .`` (see README for the mmcv build)."""
import os.path as osp

from setuptools import find_packages, setup


def get_version():
    ns = {}
    with open(osp.join('mmseg_sign', 'version.py')) as f:
        exec(f.read(), ns)
    return ns['__version__']


setup(
    name='mmseg-sign',
    version=get_version(),
    description='SIGN generalized zero-shot semantic segmentation for '
    'MMSegmentation 1.x',
    long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    license='Apache License 2.0',
    packages=find_packages(exclude=('tests', 'configs', 'tools')),
    python_requires='>=3.8',
    install_requires=[
        'torch>=2.1',
        'mmcv>=2.0.0rc4,<2.2.0',
        'mmengine==0.10.7',
        'mmsegmentation==1.2.2',
        # imported by mmseg 1.2.2 but missing from its wheel's requirements
        'ftfy',
        'regex',
        'gensim>=4.0',
        'numpy',
        'matplotlib',
        'prettytable',
    ],
    extras_require=dict(tests=['pytest']),
    zip_safe=False,
)
